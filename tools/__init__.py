"""Developer tools run from the repository root (not installed with the packages)."""
