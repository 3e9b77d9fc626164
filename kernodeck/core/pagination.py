"""The API's pagination: `limit` 1-100 and `offset` 0-1 000 000, strict integers.

An unbounded offset reaches the database as a number it cannot hold (a 500 on
PostgreSQL and SQLite alike); bounded here it is a 422 naming the parameter.
"""

from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination

MAX_LIMIT = 100
MAX_OFFSET = 1_000_000


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    class Input(Schema):
        limit: int = Field(50, ge=1, le=MAX_LIMIT, description="Items per page (1-100).")
        offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Items to skip (0-1000000).")

    def __init__(self, **kwargs):
        super().__init__(max_limit=MAX_LIMIT, **kwargs)
