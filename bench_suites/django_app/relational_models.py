"""Test 4's six tables (``workload.relational.TABLES``) as Django models.

Imported by ``models.py`` (Django registers an app's models when it imports ``<app>.models``). Table and
column names are the canonical ones: ``db_table`` names each table, and a ``ForeignKey`` named ``user`` has the
column ``user_id``. Ids are Django's implicit auto field (``DEFAULT_AUTO_FIELD``, a ``BigAutoField`` as the arm
configures it); every ``ForeignKey`` is indexed (``db_index`` defaults to True) and deletes with
``on_delete=CASCADE``, which Django's deletion collector carries out (the database's constraint has no
ON DELETE action). Tags reach posts through an explicit through model, ``PostTag``, whose primary key is the
composite ``(post_id, tag_id)`` (``CompositePrimaryKey``, Django >= 5.2): ``rel_post_tag`` has no id column.

No ``Meta.ordering``: the arm orders each relation where it reads it (``order_by("id")`` on a related manager,
``Prefetch(..., queryset=...order_by("id"))``), so that counts, aggregates and the stream carry no ORDER BY
they were not asked for.
"""

from __future__ import annotations

from django.db import models


class Org(models.Model):
    name = models.CharField(max_length=100)

    class Meta:
        db_table = "rel_org"


class User(models.Model):
    organization = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="users")
    email = models.EmailField(max_length=254, unique=True)
    name = models.CharField(max_length=100)

    class Meta:
        db_table = "rel_user"


class Post(models.Model):
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="posts")
    title = models.CharField(max_length=200)
    published = models.BooleanField(default=False)
    views = models.IntegerField(default=0)
    likes = models.IntegerField(default=0)
    tags = models.ManyToManyField("Tag", through="PostTag", related_name="posts")

    class Meta:
        db_table = "rel_post"


class Comment(models.Model):
    post = models.ForeignKey(Post, on_delete=models.CASCADE, related_name="comments")
    body = models.TextField()

    class Meta:
        db_table = "rel_comment"


class Tag(models.Model):
    name = models.CharField(max_length=50, unique=True)

    class Meta:
        db_table = "rel_tag"


class PostTag(models.Model):
    pk = models.CompositePrimaryKey("post_id", "tag_id")
    post = models.ForeignKey(Post, on_delete=models.CASCADE)
    tag = models.ForeignKey(Tag, on_delete=models.CASCADE)

    class Meta:
        db_table = "rel_post_tag"


#: in the order the tables are created (parents first)
RELATIONAL_MODELS: tuple[type[models.Model], ...] = (Org, User, Post, Comment, Tag, PostTag)
