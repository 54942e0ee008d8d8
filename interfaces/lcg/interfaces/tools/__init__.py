"""The tool functions, one module per feature; each is a row of `lcg.interfaces.operations`.

A tool is a typed function `(app, params) -> result` whose docstring is the description
clients see. It builds a command (ids and `now` come from `app`), runs it through the
writer or a query, and returns the query's or handler's typed result.
"""
