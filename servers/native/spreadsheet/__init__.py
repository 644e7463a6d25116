"""Spreadsheet: shared workbooks with sheets of cells — read and write ranges, append, find, totals.

Tools: list_spreadsheets, get_spreadsheet, create_spreadsheet, rename_spreadsheet,
share_spreadsheet, delete_spreadsheet, read_range, write_range, append_row, clear_range,
find_value, aggregate_column, add_sheet, rename_sheet, delete_sheet, protect_range,
unprotect_range.
State: spreadsheets by id (with their sheets and protected ranges) and cell values by sheet id
and A1 reference; the acting user's address.
Seed: 22 spreadsheets for the population's user ("me"): the FY2026 operating budget owned by
Finance (header and assumptions protected) with a stale FY2025 budget and a near-duplicate
copy, the approved-vendor list (population vendors, contacts, annual amounts, PO references,
a protected contract column) and an old vendor list, the inventory by SKU and location with
last year's count, an equipment tracker by employee and SKU, a sales pipeline, a contacts
export, monthly expense reports and colleagues' sheets the user cannot open.
Rules: the user sees only spreadsheets they own or that are shared with them (others → 403);
viewers cannot write (403); a write that touches a protected range is refused unless the user
owns the spreadsheet or is an editor of the range (403); ranges must lie inside the sheet's
grid and a read is at most 20000 cells (400); sheet names are unique per spreadsheet (409), a
spreadsheet keeps at least one and at most 12 sheets (409); a sheet holding protected ranges is
deleted only by the owner (403); only the owner may delete the spreadsheet, protect or
unprotect ranges (403) and protected ranges may not overlap (409); totals need a one-column
range (400).
Version history: 1 — first version.
"""

from __future__ import annotations

from servers.framework import BadRequest, Conflict, Forbidden, NotFound, Page, Service, contains, paginate, require
from servers.types import CellRef, CellValue, EmailAddress, Flag, Limit, Note, Offset, Query, Title

from .models import A1 as A1
from .models import (
    AGGREGATES,
    MAX_READ,
    MAX_SHEETS,
    Aggregate,
    AggregateResult,
    CellMatch,
    Deleted,
    GridSize,
    ProtectedRange,
    ProtectedRangeId,
    RangeRef,
    RangeValues,
    Role,
    Sheet,
    SheetName,
    Spreadsheet,
    SpreadsheetId,
    SpreadsheetState,
    UpdateResult,
    a1,
    bounds,
    letters,
    new_book,
    parse_cell,
    parse_number,
    put,
    ranges_overlap,
)
from .models import Number as Number
from .models import SheetId as SheetId
from .models import SheetIndex as SheetIndex
from .seed import seed

service = Service(
    "spreadsheet",
    version=1,
    category="productivity",
    description="Shared spreadsheets: read and write cell ranges, append rows, find values, compute totals.",
    modelled_on="Google Sheets API (spreadsheets.values, batchUpdate)",
    state=SpreadsheetState,
    seed=seed,
    # index: sheet positions are renumbered when a sheet is deleted
    system_fields=("created_at", "modified_at", "modified_by", "index"),
)


def _role(state: SpreadsheetState, book: Spreadsheet) -> str | None:
    me = state.me.lower()
    if book.owner.lower() == me:
        return "owner"
    if me in [e.lower() for e in book.editors]:
        return "editor"
    return "viewer" if me in [v.lower() for v in book.viewers] else None


def _readable(state: SpreadsheetState, spreadsheet_id: str) -> Spreadsheet:
    book = require(state.spreadsheets, spreadsheet_id, "spreadsheet")
    if _role(state, book) is None:
        raise Forbidden(f"spreadsheet {spreadsheet_id!r} is not shared with {state.me!r}")
    return book


def _writable(state: SpreadsheetState, spreadsheet_id: str) -> Spreadsheet:
    book = _readable(state, spreadsheet_id)
    if _role(state, book) == "viewer":
        raise Forbidden(f"{state.me!r} can only view spreadsheet {spreadsheet_id!r}")
    return book


def _owned(state: SpreadsheetState, spreadsheet_id: str, action: str) -> Spreadsheet:
    book = _readable(state, spreadsheet_id)
    if _role(state, book) != "owner":
        raise Forbidden(f"only the owner {book.owner!r} can {action} spreadsheet {spreadsheet_id!r}")
    return book


def _sheet(book: Spreadsheet, name: str) -> Sheet:
    found = next((s for s in book.sheets if s.name == name), None)
    if found is None:
        raise NotFound(f"sheet {name!r} not found in spreadsheet {book.id!r}; sheets: {[s.name for s in book.sheets]}")
    return found


def _in_grid(sheet: Sheet, box: tuple[int, int, int, int], field: str) -> None:
    if box[2] > sheet.rows or box[3] > sheet.columns:
        grid = a1(1, 1, sheet.rows, sheet.columns)
        raise BadRequest(f"argument {field!r}: {a1(*box)} exceeds the grid {grid} of sheet {sheet.name!r}")


def _check_protection(state: SpreadsheetState, book: Spreadsheet, sheet: Sheet, box: tuple[int, int, int, int]) -> None:
    if _role(state, book) == "owner":
        return
    for rule in book.protected_ranges:
        mine = state.me.lower() in [e.lower() for e in rule.editors]
        if rule.sheet == sheet.name and ranges_overlap(box, bounds(rule.range)) and not mine:
            raise Forbidden(
                f"range {rule.range!r} of sheet {sheet.name!r} is protected ({rule.id!r}): {rule.description}"
            )


def _touch(state: SpreadsheetState, book: Spreadsheet) -> None:
    book.modified_at, book.modified_by = state.tick(), state.me


def _free_name(book: Spreadsheet, name: str) -> None:
    if any(s.name.lower() == name.lower() for s in book.sheets):
        raise Conflict(f"spreadsheet {book.id!r} already has a sheet named {name!r}")


@service.read(op="list", entity="spreadsheet", collection="spreadsheets", reads=("title", "owner"))
def list_spreadsheets(
    state: SpreadsheetState,
    query: Query | None = None,
    owner: EmailAddress | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Spreadsheet]:
    """List the spreadsheets the user can open, most recently modified first.

    Args:
        query: Case-insensitive text to find in the title.
        owner: Only spreadsheets owned by this address.
        offset: Number of spreadsheets to skip.
        limit: Maximum number of spreadsheets to return.
    """
    rows = [
        b
        for b in state.spreadsheets.values()
        if _role(state, b) is not None
        and contains(b.title, query)
        and (owner is None or b.owner.lower() == owner.lower())
    ]
    return paginate(sorted(rows, key=lambda b: (b.modified_at, b.id), reverse=True), offset, limit)


@service.read(op="get", entity="spreadsheet", collection="spreadsheets")
def get_spreadsheet(state: SpreadsheetState, spreadsheet_id: SpreadsheetId) -> Spreadsheet:
    """Get a spreadsheet's title, sharing and sheets.

    Args:
        spreadsheet_id: Id of the spreadsheet.
    """
    return _readable(state, spreadsheet_id)


@service.write(op="create", entity="spreadsheet", collection="spreadsheets", sets=("title", "owner", "sheets"))
def create_spreadsheet(
    state: SpreadsheetState, title: Title, sheet_names: list[SheetName] | None = None
) -> Spreadsheet:
    """Create an empty spreadsheet owned by the user.

    Args:
        title: Title of the spreadsheet.
        sheet_names: Names of its sheets, in order; defaults to one sheet called Sheet1.
    """
    names = sheet_names or ["Sheet1"]
    if len({n.lower() for n in names}) != len(names):
        raise BadRequest(f"argument 'sheet_names': duplicate sheet names in {names!r}")
    if len(names) > MAX_SHEETS:
        raise BadRequest(f"argument 'sheet_names': at most {MAX_SHEETS} sheets, got {len(names)}")
    return new_book(state, title, state.me, state.tick(), names)


@service.write(op="update", entity="spreadsheet", collection="spreadsheets", sets=("title",))
def rename_spreadsheet(state: SpreadsheetState, spreadsheet_id: SpreadsheetId, title: Title) -> Spreadsheet:
    """Change a spreadsheet's title.

    Args:
        spreadsheet_id: Id of the spreadsheet.
        title: New title.
    """
    book = _writable(state, spreadsheet_id)
    book.title = title
    _touch(state, book)
    return book


@service.write(op="append", entity="spreadsheet", collection="spreadsheets", sets=("editors", "viewers"))
def share_spreadsheet(
    state: SpreadsheetState, spreadsheet_id: SpreadsheetId, email: EmailAddress, role: Role = "viewer"
) -> Spreadsheet:
    """Share a spreadsheet with a person, or change their role.

    Args:
        spreadsheet_id: Id of the spreadsheet.
        email: Address of the person.
        role: viewer (read only) or editor.
    """
    book = _writable(state, spreadsheet_id)
    if email.lower() == book.owner.lower():
        raise Conflict(f"{email!r} already owns spreadsheet {spreadsheet_id!r}")
    if email.lower() in [e.lower() for e in (book.editors if role == "editor" else book.viewers)]:
        raise Conflict(f"spreadsheet {spreadsheet_id!r} is already shared with {email!r} as {role!r}")
    book.editors = [e for e in book.editors if e.lower() != email.lower()]
    book.viewers = [v for v in book.viewers if v.lower() != email.lower()]
    (book.editors if role == "editor" else book.viewers).append(email)
    _touch(state, book)
    return book


@service.write(op="delete", entity="spreadsheet", collection="spreadsheets")
def delete_spreadsheet(state: SpreadsheetState, spreadsheet_id: SpreadsheetId) -> Deleted:
    """Delete a spreadsheet with all its sheets and protected ranges (owner only).

    Args:
        spreadsheet_id: Id of the spreadsheet.
    """
    book = _owned(state, spreadsheet_id, "delete")
    for sheet in book.sheets:
        state.cells.pop(sheet.id, None)
    del state.spreadsheets[spreadsheet_id]
    return Deleted(id=spreadsheet_id, deleted=True)


@service.read(op="lookup", entity="cell", collection="cells")
def read_range(
    state: SpreadsheetState, spreadsheet_id: SpreadsheetId, sheet: SheetName, cell_range: RangeRef
) -> RangeValues:
    """Read the values of a range, row by row (empty cells are empty strings).

    Args:
        spreadsheet_id: Id of the spreadsheet.
        sheet: Name of the sheet.
        cell_range: Range to read in A1 notation, e.g. A1:H50 (at most 20000 cells).
    """
    book = _readable(state, spreadsheet_id)
    tab = _sheet(book, sheet)
    r1, c1, r2, c2 = box = bounds(cell_range)
    _in_grid(tab, box, "cell_range")
    if (r2 - r1 + 1) * (c2 - c1 + 1) > MAX_READ:
        raise BadRequest(f"argument 'cell_range': {a1(*box)} has more than {MAX_READ} cells; read it in parts")
    grid = state.cells.get(tab.id, {})
    rows = [[grid.get(f"{letters(c)}{r}", "") for c in range(c1, c2 + 1)] for r in range(r1, r2 + 1)]
    while rows and not any(rows[-1]):
        rows.pop()
    width = max((max((i + 1 for i, v in enumerate(row) if v), default=0) for row in rows), default=0)
    return RangeValues(spreadsheet_id=book.id, sheet=tab.name, range=a1(*box), rows=[row[:width] for row in rows])


@service.write(op="update", entity="cell", collection="cells")
def write_range(
    state: SpreadsheetState,
    spreadsheet_id: SpreadsheetId,
    sheet: SheetName,
    start_cell: CellRef,
    values: list[list[CellValue]],
) -> UpdateResult:
    """Write a block of values whose top-left corner is ``start_cell``; an empty string clears a cell.

    Args:
        spreadsheet_id: Id of the spreadsheet.
        sheet: Name of the sheet.
        start_cell: Top-left cell of the block, e.g. B2.
        values: Rows of values, top to bottom, each left to right.
    """
    book = _writable(state, spreadsheet_id)
    tab = _sheet(book, sheet)
    if not values or not any(values):
        raise BadRequest("argument 'values': at least one value is required")
    top, left = parse_cell(start_cell)
    box = (top, left, top + len(values) - 1, left + max(len(row) for row in values) - 1)
    _in_grid(tab, box, "values")
    _check_protection(state, book, tab, box)
    put(state, tab.id, values, top, left)
    _touch(state, book)
    return UpdateResult(spreadsheet_id=book.id, sheet=tab.name, range=a1(*box), updated_cells=sum(map(len, values)))


@service.write(op="update", entity="cell", collection="cells")
def append_row(
    state: SpreadsheetState, spreadsheet_id: SpreadsheetId, sheet: SheetName, values: list[CellValue]
) -> UpdateResult:
    """Append a row below the last non-empty row of a sheet (the grid grows if it is full).

    Args:
        spreadsheet_id: Id of the spreadsheet.
        sheet: Name of the sheet.
        values: Values of the new row, from column A.
    """
    book = _writable(state, spreadsheet_id)
    tab = _sheet(book, sheet)
    if not any(values):
        raise BadRequest("argument 'values': the row is empty")
    if len(values) > tab.columns:
        raise BadRequest(f"argument 'values': {len(values)} values but sheet {tab.name!r} has {tab.columns} columns")
    row = max((parse_cell(ref)[0] for ref in state.cells.get(tab.id, {})), default=0) + 1
    if row > 5000:
        raise Conflict(f"sheet {tab.name!r} is full (5000 rows)")
    box = (row, 1, row, len(values))
    _check_protection(state, book, tab, box)
    tab.rows = max(tab.rows, row)
    put(state, tab.id, [values], row)
    _touch(state, book)
    return UpdateResult(spreadsheet_id=book.id, sheet=tab.name, range=a1(*box), updated_cells=len(values))


@service.write(op="update", entity="cell", collection="cells")
def clear_range(
    state: SpreadsheetState, spreadsheet_id: SpreadsheetId, sheet: SheetName, cell_range: RangeRef
) -> UpdateResult:
    """Clear every value in a range.

    Args:
        spreadsheet_id: Id of the spreadsheet.
        sheet: Name of the sheet.
        cell_range: Range to clear in A1 notation.
    """
    book = _writable(state, spreadsheet_id)
    tab = _sheet(book, sheet)
    box = bounds(cell_range)
    _in_grid(tab, box, "cell_range")
    _check_protection(state, book, tab, box)
    grid = state.cells.get(tab.id, {})
    hit = [ref for ref in grid if ranges_overlap((*parse_cell(ref), *parse_cell(ref)), box)]
    for ref in hit:
        del grid[ref]
    _touch(state, book)
    return UpdateResult(spreadsheet_id=book.id, sheet=tab.name, range=a1(*box), updated_cells=len(hit))


@service.read(op="search", entity="cell", collection="cells")
def find_value(
    state: SpreadsheetState,
    spreadsheet_id: SpreadsheetId,
    query: Query,
    sheet: SheetName | None = None,
    exact: Flag = False,
) -> list[CellMatch]:
    """Find the cells whose value contains (or equals) the query, with the values of their rows.

    Args:
        spreadsheet_id: Id of the spreadsheet.
        query: Text to look for, case-insensitive.
        sheet: Only search this sheet.
        exact: Match whole cell values only.
    """
    book = _readable(state, spreadsheet_id)
    tabs = [_sheet(book, sheet)] if sheet is not None else book.sheets
    matches: list[CellMatch] = []
    for tab in tabs:
        grid = state.cells.get(tab.id, {})
        for ref in sorted(grid, key=parse_cell):
            value = grid[ref]
            if value.lower() == query.lower() if exact else contains(value, query):
                row = parse_cell(ref)[0]
                width = max((c for r, c in map(parse_cell, grid) if r == row), default=0)
                line = [grid.get(f"{letters(c)}{row}", "") for c in range(1, width + 1)]
                matches.append(CellMatch(sheet=tab.name, cell=ref, value=value, row_values=line))
                if len(matches) == 100:
                    return matches
    return matches


@service.read(op="aggregate", entity="cell", collection="cells")
def aggregate_column(
    state: SpreadsheetState,
    spreadsheet_id: SpreadsheetId,
    sheet: SheetName,
    cell_range: RangeRef,
    function: Aggregate = "sum",
) -> AggregateResult:
    """Compute SUM, AVERAGE, COUNT, MIN or MAX over the numeric cells of a one-column range.

    Args:
        spreadsheet_id: Id of the spreadsheet.
        sheet: Name of the sheet.
        cell_range: One-column range, e.g. D2:D40 (headers and text cells are skipped).
        function: sum, average, count, min or max.
    """
    book = _readable(state, spreadsheet_id)
    tab = _sheet(book, sheet)
    r1, c1, r2, c2 = box = bounds(cell_range)
    if c1 != c2:
        raise BadRequest(f"argument 'cell_range': {cell_range!r} spans several columns; give one column such as D2:D40")
    _in_grid(tab, box, "cell_range")
    grid = state.cells.get(tab.id, {})
    raw = [v for v in (grid.get(f"{letters(c1)}{r}", "") for r in range(r1, r2 + 1)) if v]
    numbers = [n for n in map(parse_number, raw) if n is not None]
    if not numbers and function in ("average", "min", "max"):
        raise BadRequest(f"argument 'cell_range': no numeric cells in {cell_range!r} of sheet {sheet!r}")
    value = float(AGGREGATES[function](numbers))
    result = {"spreadsheet_id": book.id, "sheet": tab.name, "range": a1(*box), "function": function}
    return AggregateResult(
        **result, value=round(value, 6), numeric_cells=len(numbers), skipped_cells=len(raw) - len(numbers)
    )


@service.write(op="append", entity="sheet", collection="spreadsheets", sets=("sheets",))
def add_sheet(
    state: SpreadsheetState,
    spreadsheet_id: SpreadsheetId,
    name: SheetName,
    rows: GridSize = 1000,
    columns: GridSize = 26,
) -> Spreadsheet:
    """Add an empty sheet at the end of a spreadsheet.

    Args:
        spreadsheet_id: Id of the spreadsheet.
        name: Name of the new sheet (unique within the spreadsheet).
        rows: Number of rows of its grid.
        columns: Number of columns of its grid (at most 702, i.e. up to column ZZ).
    """
    book = _writable(state, spreadsheet_id)
    _free_name(book, name)
    if len(book.sheets) >= MAX_SHEETS:
        raise Conflict(f"spreadsheet {spreadsheet_id!r} already has the maximum of {MAX_SHEETS} sheets")
    if columns > 702:
        raise BadRequest(f"argument 'columns': at most 702 columns, got {columns}")
    book.sheets.append(Sheet(id=state.new_id("sh"), name=name, index=len(book.sheets), rows=rows, columns=columns))
    _touch(state, book)
    return book


@service.write(
    op="update",
    entity="sheet",
    collection="spreadsheets",
    reads=("sheets.name",),
    sets=("sheets.name", "protected_ranges.sheet"),
)
def rename_sheet(
    state: SpreadsheetState, spreadsheet_id: SpreadsheetId, sheet: SheetName, new_name: SheetName
) -> Spreadsheet:
    """Rename a sheet; its protected ranges follow it.

    Args:
        spreadsheet_id: Id of the spreadsheet.
        sheet: Current name of the sheet.
        new_name: New name (unique within the spreadsheet).
    """
    book = _writable(state, spreadsheet_id)
    tab = _sheet(book, sheet)
    _free_name(book, new_name)
    for rule in book.protected_ranges:
        if rule.sheet == tab.name:
            rule.sheet = new_name
    tab.name = new_name
    _touch(state, book)
    return book


@service.write(
    op="remove", entity="sheet", collection="spreadsheets", reads=("sheets.name",), sets=("sheets", "protected_ranges")
)
def delete_sheet(state: SpreadsheetState, spreadsheet_id: SpreadsheetId, sheet: SheetName) -> Spreadsheet:
    """Delete a sheet and its cells; a sheet holding protected ranges can only be deleted by the owner.

    Args:
        spreadsheet_id: Id of the spreadsheet.
        sheet: Name of the sheet.
    """
    book = _writable(state, spreadsheet_id)
    tab = _sheet(book, sheet)
    if len(book.sheets) == 1:
        raise Conflict(f"sheet {sheet!r} is the last sheet of spreadsheet {spreadsheet_id!r}")
    rules = [r.id for r in book.protected_ranges if r.sheet == tab.name]
    if rules and _role(state, book) != "owner":
        raise Forbidden(
            f"sheet {sheet!r} holds protected ranges {rules!r}; only the owner {book.owner!r} can delete it"
        )
    book.protected_ranges = [r for r in book.protected_ranges if r.id not in rules]
    state.cells.pop(tab.id, None)
    book.sheets = [s for s in book.sheets if s.id != tab.id]
    for index, remaining in enumerate(book.sheets):
        remaining.index = index
    _touch(state, book)
    return book


@service.write(
    op="append", entity="protected_range", collection="spreadsheets", reads=("sheets.name",), sets=("protected_ranges",)
)
def protect_range(
    state: SpreadsheetState,
    spreadsheet_id: SpreadsheetId,
    sheet: SheetName,
    cell_range: RangeRef,
    description: Note,
    editors: list[EmailAddress] | None = None,
) -> Spreadsheet:
    """Protect a range so that only the owner and the listed editors can change it (owner only).

    Args:
        spreadsheet_id: Id of the spreadsheet.
        sheet: Name of the sheet.
        cell_range: Range to protect in A1 notation.
        description: Why the range is protected.
        editors: People besides the owner who may still edit the range.
    """
    book = _owned(state, spreadsheet_id, "protect ranges of")
    tab = _sheet(book, sheet)
    box = bounds(cell_range)
    _in_grid(tab, box, "cell_range")
    for rule in book.protected_ranges:
        if rule.sheet == tab.name and ranges_overlap(box, bounds(rule.range)):
            raise Conflict(f"range {a1(*box)!r} overlaps protected range {rule.id!r} ({rule.range})")
    rule_id = state.new_id("pr")
    rule = ProtectedRange(id=rule_id, sheet=tab.name, range=a1(*box), description=description, editors=editors or [])
    book.protected_ranges.append(rule)
    _touch(state, book)
    return book


@service.write(op="remove", entity="protected_range", collection="spreadsheets", sets=("protected_ranges",))
def unprotect_range(
    state: SpreadsheetState, spreadsheet_id: SpreadsheetId, protected_range_id: ProtectedRangeId
) -> Spreadsheet:
    """Remove a protected range (owner only).

    Args:
        spreadsheet_id: Id of the spreadsheet.
        protected_range_id: Id of the protected range (listed in the spreadsheet's protected_ranges).
    """
    book = _owned(state, spreadsheet_id, "unprotect ranges of")
    require({r.id: r for r in book.protected_ranges}, protected_range_id, "protected range")
    book.protected_ranges = [r for r in book.protected_ranges if r.id != protected_range_id]
    _touch(state, book)
    return book
