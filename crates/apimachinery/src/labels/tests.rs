//! Label selector tests: grammar, matching, metav1 conversion and round trips.

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn parse_and_match_table() {
    let web = labels(&[("app", "web"), ("tier", "fe"), ("example.com/team", "a")]);
    let db = labels(&[("app", "db"), ("canary", "")]);
    let none = labels(&[]);
    // (selector, matches web, matches db, matches none, canonical display)
    let cases: &[(&str, bool, bool, bool, &str)] = &[
        ("", true, true, true, ""),
        ("app=web", true, false, false, "app=web"),
        ("app==web", true, false, false, "app==web"),
        ("app!=web", false, true, true, "app!=web"),
        ("app in (web,db)", true, true, false, "app in (db,web)"),
        ("app notin (web)", false, true, true, "app notin (web)"),
        ("canary", false, true, false, "canary"),
        ("!canary", true, false, true, "!canary"),
        (
            "  app = web ,  tier==fe ",
            true,
            false,
            false,
            "app=web,tier==fe",
        ),
        ("tier=fe,app=web", true, false, false, "app=web,tier=fe"),
        (
            "example.com/team=a",
            true,
            false,
            false,
            "example.com/team=a",
        ),
        ("canary=", false, true, false, "canary="),
        (
            "app in (web, db),!canary",
            true,
            false,
            false,
            "app in (db,web),!canary",
        ),
        ("app in ()", false, false, false, "app in ()"),
    ];
    for (input, m_web, m_db, m_none, display) in cases {
        let selector = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(selector.matches(&web), *m_web, "{input:?} vs web");
        assert_eq!(selector.matches(&db), *m_db, "{input:?} vs db");
        assert_eq!(selector.matches(&none), *m_none, "{input:?} vs none");
        assert_eq!(selector.to_string(), *display, "{input:?}");
    }
}

#[test]
fn parse_errors_say_what_is_accepted() {
    let cases: &[(&str, &str)] = &[
        (
            "=b",
            "unable to parse requirement: found '=', expected: identifier",
        ),
        (
            "a b",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=",
        ),
        (
            "a=b c",
            "unable to parse requirement: found 'c', expected: ',' or 'end of string'",
        ),
        (
            "a in b",
            "unable to parse requirement: found 'b', expected: '('",
        ),
        (
            "a in (b",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        (
            "!",
            "unable to parse requirement: found '', expected: identifier after '!'",
        ),
        (
            "!a=b",
            "unable to parse requirement: found '=', expected: ',' or 'end of string' after '!a'",
        ),
        (
            "a>1",
            "unable to parse requirement: found '>', expected: one of '=', '==', '!=', 'in', 'notin', '!', '(', ')', ','",
        ),
        (
            "a=b,",
            "unable to parse requirement: found '', expected: identifier",
        ),
    ];
    for (input, message) in cases {
        let error = LabelSelector::parse(input).expect_err(input);
        assert_eq!(error.message, *message, "{input:?}");
    }
}

#[test]
fn invalid_keys_and_values_are_rejected() {
    for input in [
        "-a=b",
        "a/b/c",
        "a=-b",
        "Example.com/a=b",
        &format!("a={}", "v".repeat(64)),
    ] {
        let error = LabelSelector::parse(input).expect_err(input);
        assert!(
            error.message.starts_with("unable to parse requirement: "),
            "{input}: {error}"
        );
        assert!(error.message.contains("Invalid value"), "{input}: {error}");
    }
}

#[test]
fn matches_json_labels() {
    let object = json!({"metadata": {"labels": {"app": "web", "n": 1}}});
    let selector = LabelSelector::parse("app=web,!n").expect("valid");
    assert!(
        selector.matches_object(&object),
        "non-string label values are not labels"
    );
    assert!(
        !LabelSelector::parse("app=db")
            .expect("valid")
            .matches_object(&object)
    );
    assert!(
        LabelSelector::parse("")
            .expect("valid")
            .matches_object(&json!({}))
    );
}

#[test]
fn from_metav1_label_selector() {
    let selector = LabelSelector::from_label_selector(&json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["fe", "be"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "NotIn", "values": ["x"]},
            {"key": "team", "operator": "Exists"}
        ]
    }))
    .expect("valid");
    assert_eq!(
        selector.to_string(),
        "app=web,!canary,team,tier in (be,fe),zone notin (x)"
    );
    assert!(selector.matches(&labels(&[("app", "web"), ("tier", "fe"), ("team", "t")])));
    assert!(!selector.matches(&labels(&[("app", "web"), ("tier", "fe")])));
    assert!(
        LabelSelector::from_label_selector(&json!({}))
            .expect("empty")
            .is_empty()
    );
    assert!(
        LabelSelector::from_label_selector(&Value::Null)
            .expect("null")
            .is_empty()
    );
}

#[test]
fn to_metav1_label_selector() {
    let cases: &[(&str, Value)] = &[
        ("", json!({})),
        (
            "app=web,tier==fe",
            json!({"matchLabels": {"app": "web", "tier": "fe"}}),
        ),
        (
            "app!=web,!canary,team,zone in (a,b),x notin (y)",
            json!({"matchExpressions": [
                {"key": "app", "operator": "NotIn", "values": ["web"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "team", "operator": "Exists"},
                {"key": "x", "operator": "NotIn", "values": ["y"]},
                {"key": "zone", "operator": "In", "values": ["a", "b"]}
            ]}),
        ),
        (
            "a=x,a=y",
            json!({"matchExpressions": [
                {"key": "a", "operator": "In", "values": ["x"]},
                {"key": "a", "operator": "In", "values": ["y"]}
            ]}),
        ),
    ];
    for (input, expected) in cases {
        let selector = LabelSelector::parse(input).expect("valid");
        assert_eq!(selector.to_label_selector(), *expected, "{input:?}");
    }
}

#[test]
fn metav1_label_selector_errors_name_the_field() {
    let cases: &[(Value, &str)] = &[
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}),
            "matchExpressions[0].operator: Unsupported value: \"Equals\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
            "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            "matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            json!({"matchExpressions": [{"operator": "Exists"}]}),
            "matchExpressions[0].key: Required value",
        ),
        (
            json!({"matchLabels": {"-app": "x"}}),
            "matchLabels: key: Invalid value: \"-app\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            json!({"matchLabels": {"app": 1}}),
            "matchLabels.app: Invalid value: 1: must be a string",
        ),
    ];
    for (selector, message) in cases {
        let error = LabelSelector::from_label_selector(selector).expect_err("invalid");
        assert_eq!(error.message, *message);
    }
}

fn key_strategy() -> impl Strategy<Value = String> {
    (
        "[a-z0-9]([a-z0-9._-]{0,8}[a-z0-9])?",
        proptest::option::of("[a-z]{1,6}\\.[a-z]{2,3}"),
    )
        .prop_map(|(name, prefix)| match prefix {
            Some(prefix) => format!("{prefix}/{name}"),
            None => name,
        })
}

fn value_strategy() -> impl Strategy<Value = String> {
    "([A-Za-z0-9]([A-Za-z0-9._-]{0,8}[A-Za-z0-9])?)?"
}

fn requirement_strategy() -> impl Strategy<Value = Requirement> {
    let op = prop_oneof![
        Just(Operator::Equals),
        Just(Operator::DoubleEquals),
        Just(Operator::NotEquals),
        Just(Operator::In),
        Just(Operator::NotIn),
        Just(Operator::Exists),
        Just(Operator::DoesNotExist),
    ];
    (
        key_strategy(),
        op,
        proptest::collection::vec(value_strategy(), 1..4),
    )
        .prop_map(|(key, op, values)| {
            let values = match op {
                Operator::Exists | Operator::DoesNotExist => Vec::new(),
                Operator::In | Operator::NotIn => values,
                _ => values.into_iter().take(1).collect(),
            };
            Requirement::new(key, op, values).expect("strategy builds valid requirements")
        })
}

proptest! {
    #[test]
    fn display_parse_round_trip(requirements in proptest::collection::vec(requirement_strategy(), 0..5)) {
        let selector = LabelSelector::from_requirements(requirements);
        let text = selector.to_string();
        let parsed = LabelSelector::parse(&text).map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        prop_assert_eq!(&parsed, &selector);
    }

    #[test]
    fn metav1_form_selects_the_same_labels(
        requirements in proptest::collection::vec(requirement_strategy(), 0..4),
        present in proptest::collection::vec(proptest::option::of(value_strategy()), 4),
    ) {
        // Labels over the selector's own keys, so requirements actually bite.
        let labels: BTreeMap<String, String> = requirements
            .iter()
            .zip(&present)
            .filter_map(|(r, value)| Some((r.key().to_string(), value.clone()?)))
            .collect();
        let selector = LabelSelector::from_requirements(requirements);
        let converted = LabelSelector::from_label_selector(&selector.to_label_selector())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(converted.matches(&labels), selector.matches(&labels));
    }
}
