"""The Django app that holds the django arm's models (see bench_suites/django_arm.py).

It is only imported by ``django.setup()`` after the arm has called
``settings.configure(...)``; it has no migrations: the arm creates the tables
with the schema editor straight from the models.
"""
