"""Pure logic of KAIROS: no I/O, no imports from the rest of the project."""
