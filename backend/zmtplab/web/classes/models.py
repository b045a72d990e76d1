"""The models of the presenter-mode routes."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ClassCreated(BaseModel):
    code: str = Field(description="6 characters for students to type (case-insensitive)")
    teacher_token: str = Field(description="proves the teacher: the first message on `/ws/classes/{code}?role=teacher` "
                                           "is `{\"type\": \"auth\", \"token\": ...}` (never put it in a URL)")
    join_url: str
    max_students: int


class ClassInfo(BaseModel):
    code: str
    students: int
    following: int
    teacher: bool = Field(description="whether the teacher is connected")
    lesson: str | None = None
    step: int | None = None
