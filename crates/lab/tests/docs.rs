//! The registry tables of docs/scenarios.md are the registries' own Markdown (`tributary list
//! --markdown`): a strategy added to a registry must appear in the docs.

use tributary_proto::cc::Controllers;
use tributary_proto::registry::{markdown, Family};
use tributary_proto::sched::Schedulers;
use tributary_proto::scheme::Schemes;
use tributary_sim::Applications;

fn section(doc: &str, tag: &str) -> String {
    let open = format!("<!-- registry:{tag} -->\n");
    let start = doc
        .find(&open)
        .unwrap_or_else(|| panic!("docs/scenarios.md has no `{open}` marker"))
        + open.len();
    let end = doc[start..]
        .find("<!-- /registry -->")
        .expect("closing marker")
        + start;
    doc[start..end].to_string()
}

fn check<F: Family>(doc: &str, tag: &str) {
    assert_eq!(
        section(doc, tag),
        markdown::<F>(),
        "docs/scenarios.md registry:{tag} is stale: run scripts/registry-docs.py"
    );
}

#[test]
fn registry_tables_match_the_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenarios.md");
    let doc = std::fs::read_to_string(path).expect("docs/scenarios.md");
    check::<Schemes>(&doc, "schemes");
    check::<Controllers>(&doc, "cc");
    check::<Schedulers>(&doc, "schedulers");
    check::<Applications>(&doc, "apps");
}
