"""Reference solutions of the assignments. Remove this folder before handing the exercises out."""
