"""The production store's tests (notebook 11): contract, lifecycle, processes, benchmark smoke."""
