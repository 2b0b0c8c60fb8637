"""Course assignments for the book, their reference solutions and an autograder.

Run ``python -m exercises.grader --list`` from the repository root to see the assignments.
"""
