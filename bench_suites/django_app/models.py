"""The three canonical models (Tests 1-3) as Django models.

Field and column names are the canonical ones (``parent`` has the column
``parent_id``); the 32 wide columns are built in a loop over
``contract.MODELS["wide"].wide_fields``.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from pytest_ormbench.arms.contract import DECIMAL_DIGITS, DECIMAL_PLACES
from pytest_ormbench.workload.spec import MODELS, TEXT_MAX, WIDE_DEFAULTS, Field


class JournalBase(models.Model):
    """Test 1's fields; the id is Django's implicit AutoField (DEFAULT_AUTO_FIELD)."""

    timestamp = models.DateTimeField()
    level = models.IntegerField(db_index=True)
    text = models.CharField(max_length=TEXT_MAX, db_index=True)

    class Meta:
        abstract = True


class JournalSimple(JournalBase):
    class Meta:
        db_table = "journal_simple"


class JournalFk(JournalBase):
    # SET_NULL is carried out by Django's deletion collector, not by the database.
    parent = models.ForeignKey(
        "self", null=True, on_delete=models.SET_NULL, related_name="children", db_index=True
    )
    links = models.ManyToManyField(
        "self", symmetrical=False, related_name="linked_from", db_table="journal_fk_links"
    )

    class Meta:
        db_table = "journal_fk"


def _json_default() -> dict[str, Any]:
    # a callable, so that objects never share one mutable dict
    return dict(WIDE_DEFAULTS["json"])


def _wide_field(spec: Field) -> models.Field:
    kw: dict[str, Any] = {}
    if spec.has_default:
        kw["default"] = _json_default if spec.kind == "json" else spec.default
    if spec.nullable:
        kw["null"] = True
    kind = spec.kind
    if kind == "float":
        return models.FloatField(**kw)
    if kind == "smallint":
        return models.SmallIntegerField(**kw)
    if kind == "int":
        return models.IntegerField(**kw)
    if kind == "bigint":
        return models.BigIntegerField(**kw)
    if kind == "char":
        return models.CharField(max_length=TEXT_MAX, **kw)
    if kind == "text":
        return models.TextField(**kw)
    if kind == "decimal":
        return models.DecimalField(max_digits=DECIMAL_DIGITS, decimal_places=DECIMAL_PLACES, **kw)
    if kind == "json":
        return models.JSONField(**kw)
    raise ValueError(f"no Django field for kind {kind!r}")


def _wide_model() -> type[models.Model]:
    attrs: dict[str, Any] = {
        "__module__": __name__,
        "Meta": type("Meta", (), {"db_table": "journal_wide"}),
    }
    for spec in MODELS["wide"].wide_fields:
        attrs[spec.name] = _wide_field(spec)
    return type("JournalWide", (JournalBase,), attrs)


JournalWide = _wide_model()

BY_MODEL: dict[str, type[models.Model]] = {"simple": JournalSimple, "fk": JournalFk, "wide": JournalWide}

# Test 4's models live in their own module; importing them here is what registers them with the app
from .relational_models import Comment, Org, Post, PostTag, Tag, User  # noqa: E402,F401
