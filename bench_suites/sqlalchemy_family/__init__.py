"""What the four SQLAlchemy-family arms share, by concern.

Two model flavours (plain SQLAlchemy 2.x declarative, and SQLModel table models) times two drivers (sync
``Session`` and ``AsyncSession``) make four arms (``sqlalchemy_arm``, ``sqlalchemy_async_arm``,
``sqlmodel_arm``, ``sqlmodel_async_arm``), each a few lines that pick a flavour and a base:

- :mod:`.models`: column types, the two flavours' model factories, :class:`~.models.Flavor` (the models,
  ``select`` and the session methods that run a query: ``scalars``/``execute``, or SQLModel's ``exec``);
- :mod:`.engine`: one connection per engine (SQLAlchemy's SQLite recipe on SQLite; a one-connection queue
  pool on a server) and the server drivers;
- :mod:`.base`: state and untimed parts of every arm, and the family's notes
  (``bench_suites/notes/sqlalchemy_family.toml``: its deviations, and the choices ``describe()`` records);
- :mod:`.sync`: :class:`~.sync.SyncOps`, the op bodies on a ``Session``;
- :mod:`.async_`: :class:`~.async_.AsyncOps`, the same shapes awaited (why they are two copies: its docstring).
"""
