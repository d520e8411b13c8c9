"""Deprecated: the SQLAlchemy family's shared code is the package :mod:`pytest_ormbench.suites.sqlalchemy_family`.

This module re-exports what it used to define, for third-party code that imports it.
"""

from __future__ import annotations

import warnings

from pytest_ormbench.suites.sqlalchemy_family.async_ import AsyncOps
from pytest_ormbench.suites.sqlalchemy_family.base import NOTES, _as_dict, _SABase
from pytest_ormbench.suites.sqlalchemy_family.engine import (SERVER_DIALECTS, SERVER_DRIVER_MODULES, SERVER_POOL, OneConnection,
    _driver_version, server_url)
from pytest_ormbench.suites.sqlalchemy_family.models import (_MODEL_CACHE, _MYSQL, PY_TYPES, SA_TYPES, TIMESTAMP_TYPE, Flavor,
    ModelSet, _build_sa_models, _build_sqlmodel_models, _JournalColumns, _sa_wide_column, models_for, sa_flavor,
    sqlmodel_flavor, table_name)
from pytest_ormbench.suites.sqlalchemy_family.sync import SyncOps

warnings.warn("pytest_ormbench.suites._sqlalchemy_common is deprecated: import from pytest_ormbench.suites.sqlalchemy_family "
              "(models, engine, base, sync, async_)", DeprecationWarning, stacklevel=2)

#: what every SQLAlchemy-family arm does differently from the others (now bench_suites/notes/sqlalchemy_family.toml)
DEVIATIONS: dict[str, str] = NOTES.deviations
#: the family's choices, recorded by describe() (now the notes' [arm_info])
COMMON_NOTES: dict[str, str] = NOTES.arm_info

__all__ = ["AsyncOps", "COMMON_NOTES", "DEVIATIONS", "Flavor", "ModelSet", "OneConnection", "PY_TYPES", "SA_TYPES",
           "SERVER_DIALECTS", "SERVER_DRIVER_MODULES", "SERVER_POOL", "SyncOps", "TIMESTAMP_TYPE", "_JournalColumns",
           "_MODEL_CACHE", "_MYSQL", "_SABase", "_as_dict", "_build_sa_models", "_build_sqlmodel_models",
           "_driver_version", "_sa_wide_column", "models_for", "sa_flavor", "server_url", "sqlmodel_flavor",
           "table_name"]
