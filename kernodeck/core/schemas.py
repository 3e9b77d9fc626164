"""The base of every API input schema: a field the schema does not name is refused.

A typo (`"untis": 2`) or a field from another operation answers 422 naming it, instead of
being dropped while the request goes through with the default; the document says
`additionalProperties: false`, so a client's generator knows it too.
"""

from ninja import Schema
from pydantic import ConfigDict


class InputSchema(Schema):
    model_config = ConfigDict(extra="forbid")
