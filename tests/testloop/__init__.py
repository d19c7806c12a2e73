"""The test loop itself: which tests make check, make test and the lanes run."""
