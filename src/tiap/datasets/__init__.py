"""Stage 1: benchmark datasets."""
