"""Running a 1-D kernel over batch axes, bucketed lengths and the devices of a mesh (`recipe`,
with the `Kernel` value), the distributed sample sort of split samples (`sample_sort`) and the
mesh forms of the ranking metrics built on it from the core's terms (`forms`). Imports the core
only."""
