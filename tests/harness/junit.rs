//! JUnit XML for the rostest runners (rostest passes `--gtest_output=xml:PATH`).

/// A JUnit XML report, the format rostest reads: one case per (name, seconds, failure).
pub fn report(suite: &str, cases: &[(String, f64, Option<String>)]) -> String {
    let failures = cases.iter().filter(|c| c.2.is_some()).count();
    let total: f64 = cases.iter().map(|c| c.1).sum();
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<testsuite name=\"{suite}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{total:.3}\">\n",
        cases.len()
    );
    for (name, time, failure) in cases {
        match failure {
            None => {
                xml += &format!(
                    "  <testcase classname=\"{suite}\" name=\"{name}\" time=\"{time:.3}\"/>\n"
                )
            }
            Some(msg) => {
                let msg = escape(msg);
                xml += &format!(
                    "  <testcase classname=\"{suite}\" name=\"{name}\" time=\"{time:.3}\">\n    <failure message=\"{msg}\">{msg}</failure>\n  </testcase>\n"
                );
            }
        }
    }
    xml + "</testsuite>\n"
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
