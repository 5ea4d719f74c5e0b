"""The core: types, numerics, the input checks, where samples live, and the ranking engine (one
sort, tie groups, running sums) with its CPU kernels. Imports nothing above it."""
