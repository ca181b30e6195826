"""The typer CLI: thin glue over quantadvise.api.

A command is a short-lived process that allocates mostly long-lived objects (modules, classes,
validators): with the interpreter's default threshold (a young-generation pass every 700 net
allocations) the cyclic garbage collector makes ~100 passes over them during ``recommend`` (~20 ms of
CPU timed inside the process). The CLI raises the threshold so a typical command runs none; a long one
(``check`` over many files, ``calibrate``) still collects, every 100,000 net allocations. Set here,
before a command imports typer or pydantic; the library (``import quantadvise``) leaves the collector alone.
"""

import gc

if gc.get_threshold()[0] < 100_000:  # never lower a threshold someone raised
    gc.set_threshold(100_000, *gc.get_threshold()[1:])
