"""The measures a round can have: named per-round series; a new measure is a new name here."""

#: the measure every timed round has: the op's wall time, seconds
WALL = "wall_seconds"
#: instructions the op executed, counted by callgrind (``--ormbench-instructions``)
INSTRUCTIONS = "instructions"
#: the collector's runs inside the timed region
GC_COLLECTIONS = "gc_collections"
#: what ``ormbench compare`` can judge by: a measure with one value per round, lower is better
COMPARABLE = (WALL, INSTRUCTIONS)
