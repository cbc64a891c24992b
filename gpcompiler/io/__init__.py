"""Reading and writing data: curves, datasets and the bundled data (curves.py), fields
(fields.py), and the atomic file writes every command uses."""
