//! Tables in the documentation generated from the code's declarations, and the check that a
//! page still holds its table (parameters, interfaces, reconfigurable values).

/// A Markdown table: the header's columns, then one row per item.
pub fn markdown_table<T>(columns: &[&str], items: &[T], row: impl Fn(&T) -> Vec<String>) -> String {
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(columns.iter().map(|c| c.to_string()).collect());
    out.push_str(&format!("|{}\n", "---|".repeat(columns.len())));
    for item in items {
        out.push_str(&line(row(item)));
    }
    out
}

/// Checks that the documentation page `page` (its text: `doc`) contains `table` verbatim;
/// the error names what the table lists (`what`) and shows the table the page must contain.
pub fn check_page(what: &str, table: &str, page: &str, doc: &str) -> Result<(), String> {
    if doc.contains(table) {
        Ok(())
    } else {
        Err(format!(
            "the {what} table of {page} is out of date; it must contain:\n{table}"
        ))
    }
}
