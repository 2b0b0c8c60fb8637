"""The sources of the assignments: each exNN_*.py is the complete assignment with its solution and model
answers between markers; ``python -m exercises.release templates`` cuts the students' templates from them.
The students' release (``python -m exercises.release student DIR``) leaves this folder out."""
