"""Spreadsheet service: id and semantic types, records, state and cell-reference helpers."""

from __future__ import annotations

import datetime as dt
import math
import re
import statistics
from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import Field

from servers.framework import BadRequest, Record, ServiceState
from servers.roles import ROLE_KEY
from servers.types import CellRef, CellValue, Count, DateTime, EmailAddress, Flag, Note, Title, ident, sem

SpreadsheetId = Annotated[str, ident("spreadsheet", "spreadsheet")]
SheetId = Annotated[str, ident("spreadsheet", "sheet")]
ProtectedRangeId = Annotated[str, ident("spreadsheet", "protected_range")]
SheetName = Annotated[
    str, sem("spreadsheet.sheet_name", "Name of a sheet (tab) of a spreadsheet.", min_length=1, max_length=100)
]
RangeRef = Annotated[
    str,
    sem(
        "spreadsheet.range",
        "Cell range in A1 notation, e.g. A1:D20 (a single cell such as B3 is a range too).",
        pattern=r"^[A-Z]{1,3}[1-9][0-9]{0,5}(:[A-Z]{1,3}[1-9][0-9]{0,5})?$",
    ),
]
Role = Annotated[Literal["viewer", "editor"], sem("spreadsheet.role", "Access role granted on a shared spreadsheet.")]
Aggregate = Annotated[
    Literal["sum", "average", "count", "min", "max"],
    sem("spreadsheet.aggregate", "Function computed over the numeric cells of a one-column range."),
]
Number = Annotated[float, sem("spreadsheet.number", "Numeric value computed from cells.")]
SheetIndex = Annotated[int, sem("spreadsheet.sheet_index", "Position of a sheet among the tabs, from 0.", ge=0)]
GridSize = Annotated[int, sem("spreadsheet.grid_size", "Number of rows or columns of a sheet's grid.", ge=1, le=5000)]

MAX_SHEETS, MAX_READ = 12, 20_000
AGGREGATES: dict[str, Callable[[list[float]], float]] = {
    "sum": math.fsum,
    "average": statistics.fmean,
    "count": len,
    "min": min,
    "max": max,
}
A1 = re.compile(r"^([A-Z]{1,3})([1-9][0-9]{0,5})$")


class ProtectedRange(Record):
    id: ProtectedRangeId
    sheet: SheetName
    range: RangeRef
    description: Note = Field(description="Why the range is protected.")
    editors: list[EmailAddress] = Field(
        description="People besides the owner who may edit the range.", json_schema_extra={ROLE_KEY: "member"}
    )


class Sheet(Record):
    id: SheetId
    name: SheetName
    index: SheetIndex
    rows: GridSize = Field(description="Number of rows of the grid.")
    columns: GridSize = Field(description="Number of columns of the grid.")


class Spreadsheet(Record):
    id: SpreadsheetId
    title: Title
    owner: EmailAddress = Field(
        description="Address of the spreadsheet's owner.", json_schema_extra={ROLE_KEY: "owner"}
    )
    editors: list[EmailAddress] = Field(
        default_factory=list, description="People who may edit.", json_schema_extra={ROLE_KEY: "member"}
    )
    viewers: list[EmailAddress] = Field(
        default_factory=list, description="People who may only read.", json_schema_extra={ROLE_KEY: "member"}
    )
    sheets: list[Sheet] = Field(description="Sheets (tabs) in display order.")
    protected_ranges: list[ProtectedRange] = Field(default_factory=list, description="Ranges locked against edits.")
    created_at: DateTime
    modified_at: DateTime
    modified_by: EmailAddress = Field(description="Address of the person who last changed it.")


class RangeValues(Record):
    spreadsheet_id: SpreadsheetId
    sheet: SheetName
    range: RangeRef = Field(description="The range that was read.")
    rows: list[list[CellValue]] = Field(description="Cell values row by row; trailing empty rows and columns trimmed.")


class UpdateResult(Record):
    spreadsheet_id: SpreadsheetId
    sheet: SheetName
    range: RangeRef = Field(description="The range that was changed.")
    updated_cells: Count = Field(description="Number of cells written or cleared.")


class CellMatch(Record):
    sheet: SheetName
    cell: CellRef
    value: CellValue = Field(description="The matching cell's value.")
    row_values: list[CellValue] = Field(description="Every value of the matching cell's row, from column A.")


class AggregateResult(Record):
    spreadsheet_id: SpreadsheetId
    sheet: SheetName
    range: RangeRef
    function: Aggregate
    value: Number = Field(description="The computed value.")
    numeric_cells: Count = Field(description="Cells that held a number and were counted.")
    skipped_cells: Count = Field(description="Non-empty cells skipped because they are not numbers.")


class Deleted(Record):
    id: SpreadsheetId = Field(description="Id of the deleted spreadsheet.")
    deleted: Flag = Field(description="Always true.")


class SpreadsheetState(ServiceState):
    me: str = ""
    spreadsheets: dict[str, Spreadsheet] = {}
    cells: dict[str, dict[str, str]] = {}


def letters(col: int) -> str:
    out = ""
    while col:
        col, rem = divmod(col - 1, 26)
        out = chr(65 + rem) + out
    return out


def parse_cell(ref: str) -> tuple[int, int]:
    match = A1.match(ref)
    if match is None:
        raise BadRequest(f"{ref!r} is not an A1 cell reference")
    col = 0
    for char in match.group(1):
        col = col * 26 + ord(char) - 64
    return int(match.group(2)), col


def bounds(ref: str) -> tuple[int, int, int, int]:
    """(first row, first column, last row, last column) of an A1 range, normalised."""
    start, _, end = ref.partition(":")
    (r1, c1), (r2, c2) = parse_cell(start), parse_cell(end or start)
    return min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2)


def parse_number(raw: str) -> float | None:
    try:
        value = float(raw.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) and abs(value) < 1e15 else None


def a1(r1: int, c1: int, r2: int, c2: int) -> str:
    first, last = f"{letters(c1)}{r1}", f"{letters(c2)}{r2}"
    return first if first == last else f"{first}:{last}"


def ranges_overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def put(state: SpreadsheetState, sheet_id: str, rows: list[list[str]], top: int = 1, left: int = 1) -> None:
    grid = state.cells.setdefault(sheet_id, {})
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            ref = f"{letters(left + c)}{top + r}"
            if value == "":
                grid.pop(ref, None)
            else:
                grid[ref] = value


def new_book(state: SpreadsheetState, title: str, owner: str, when: dt.datetime, names: list[str]) -> Spreadsheet:
    sheets = [Sheet(id=state.new_id("sh"), name=n, index=i, rows=1000, columns=26) for i, n in enumerate(names)]
    book = Spreadsheet(
        id=state.new_id("ss"),
        title=title,
        owner=owner,
        sheets=sheets,
        created_at=when,
        modified_at=when,
        modified_by=owner,
    )
    state.spreadsheets[book.id] = book
    return book
