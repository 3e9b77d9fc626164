"""Files customers download and run on their own machine: standard library and PyTorch only,
no import from Kernodeck (this folder holds nothing else, so running them by path never
shadows a standard-library module)."""
