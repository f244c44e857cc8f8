"""h5regress: an HDF5 I/O performance regression suite.

The package holds what the ReFrame checks and the command line share: the
record (:mod:`h5regress.record`), the parsers (:mod:`h5regress.parsers`), the
tool resolver (:mod:`h5regress.tools`), the checks' base (:mod:`h5regress.checkbase`),
and the nightly gate and report.
"""
