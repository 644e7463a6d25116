"""Parameter validators: shared between annotations that validate alike, never between others."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import Field, ValidationError

from servers.tooling import adapter, validator


def test_annotations_differing_only_in_description_share_a_validator() -> None:
    one = Annotated[int, Field(description="Units ordered.", ge=1, le=10, json_schema_extra={"x-semantic-type": "a"})]
    two = Annotated[int, Field(description="Units returned.", ge=1, le=10, json_schema_extra={"x-semantic-type": "b"})]
    assert validator(one) is validator(two)
    with pytest.raises(ValidationError):
        validator(two).validate_python(11)
    # the schemas a listing shows keep each annotation's own description
    assert adapter(one)[1]["description"] == "Units ordered." and adapter(two)[1]["description"] == "Units returned."


def test_annotations_that_validate_differently_do_not() -> None:
    pairs = [
        (Annotated[int, Field(description="n", ge=1)], Annotated[int, Field(description="n", ge=2)]),
        (Annotated[Literal["a", "b"], Field(description="s")], Annotated[Literal["a", "c"], Field(description="s")]),
        (Annotated[Literal[1], Field(description="s")], Annotated[Literal["1"], Field(description="s")]),
        (Annotated[str, Field(description="s", max_length=3)], Annotated[str, Field(description="s")]),
    ]
    for first, second in pairs:
        assert validator(first) is not validator(second)
