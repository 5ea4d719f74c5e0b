"""Running a 1-D kernel over batch axes, bucketed lengths and the devices of a mesh (the recipe),
and the distributed sample sort behind the exact metrics of split samples. Imports the core only."""
