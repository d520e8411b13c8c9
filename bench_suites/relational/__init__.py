"""Test 4's arms: one module per ORM (or control family), each class a subclass of its ORM's Tests 1-3 arm and of
:class:`pytest_ormbench.arms.relational.RelationalArm`, with its declarations in ``<arm name>.toml`` here.

Nothing in this file may import an ORM: the parent reads the TOML files through this package.
"""
