"""The reporter: pytest-benchmark JSON in, the reference suite's tables and charts out.

It reads JSON only and imports no ORM (and no pytest).
"""
