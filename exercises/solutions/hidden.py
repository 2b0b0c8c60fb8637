"""The teacher's hidden variants: every check's seed is shifted by ``SEED_OFFSET`` when grading from this
repository (the students' release leaves this folder out, so students grade on the visible inputs).

The repository is public: change the number in your course's private copy each term, or set
``EXERCISES_SEED_OFFSET`` when you grade.
"""

SEED_OFFSET = 104_729
