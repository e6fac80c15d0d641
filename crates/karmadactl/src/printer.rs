//! kubectl-style tables: columns separated by three spaces, aligned like Go's tabwriter.

use std::io::Write;

/// Renders rows (the first row is the header) as kubectl prints them.
pub fn table(rows: &[Vec<String>]) -> String {
    let mut writer = tabwriter::TabWriter::new(Vec::new()).padding(3).minwidth(0);
    for row in rows {
        // Writing into a Vec cannot fail.
        let _ = writeln!(writer, "{}", row.join("\t"));
    }
    let bytes = writer.into_inner().unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns_like_kubectl() {
        let out = table(&[
            vec!["NAME".into(), "VERSION".into()],
            vec!["member-shanghai".into(), "v1.30.2".into()],
        ]);
        assert_eq!(
            out,
            "NAME              VERSION\nmember-shanghai   v1.30.2\n"
        );
    }
}
