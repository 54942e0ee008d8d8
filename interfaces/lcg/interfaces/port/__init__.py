"""`lcg import` and `lcg export`: other tools' memory formats read into and written from lcg."""
