//! Status items built straight as Lua tables against their JSON form converted eagerly (as mlua's serde
//! conversion of the serialized items would): scripts that read, write, iterate and return them agree.

use karmada_api::work::{AggregatedStatusItem, ResourceHealth};
use mlua::Lua;
use proptest::prelude::*;

use super::items::status_items;
use super::lazy::from_lua;
use super::lazy_tests::{eager_from_lua, eager_to_lua, json, run};

/// `items` built in a scope (as a call lends them) and handed to `then` within it.
fn built<R>(
    lua: &Lua,
    items: &[AggregatedStatusItem],
    then: impl FnOnce(mlua::Value) -> mlua::Result<R>,
) -> mlua::Result<R> {
    lua.scope(|scope| then(status_items(lua, scope, items)?))
}

const SCRIPTS: &[&str] = &[
    "return obj",
    "return #obj",
    "local out = {} for i, item in ipairs(obj) do out[i] = {s = item.status} end return out",
    "local out = {} for _, item in ipairs(obj) do for k, v in pairs(item) do out[k .. item.clusterName] = v end end return out",
    "for _, item in ipairs(obj) do item.applied = not item.applied item.health = nil end return obj",
    "for _, item in ipairs(obj) do if type(item.status) == 'table' then item.status.seen = 1 end end return obj",
    "local n = 0 for _, item in ipairs(obj) do if item.status ~= nil and item.status.a ~= nil then n = n + 1 end end return n",
];

fn item() -> impl Strategy<Value = AggregatedStatusItem> {
    (
        "[a-z]{1,4}",
        proptest::option::of(json()),
        any::<bool>(),
        prop_oneof![Just(String::new()), "[a-z ]{1,8}"],
        proptest::option::of(prop_oneof![
            Just(ResourceHealth::Healthy),
            Just(ResourceHealth::Unhealthy),
            Just(ResourceHealth::Unknown),
        ]),
    )
        .prop_map(|(cluster_name, status, applied, applied_message, health)| {
            AggregatedStatusItem {
                cluster_name,
                status,
                applied,
                applied_message,
                health,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn items_built_directly_match_their_json_form(items in prop::collection::vec(item(), 0..4)) {
        let as_json = serde_json::to_value(&items).expect("items serialize");
        for script in SCRIPTS {
            let lua = Lua::new();
            let eager = eager_to_lua(&lua, &as_json)
                .and_then(|v| run(&lua, script, v))
                .and_then(|v| eager_from_lua(&lua, v))
                .map_err(|e| e.to_string());
            let lua = Lua::new();
            let direct = built(&lua, &items, |v| from_lua(&lua, run(&lua, script, v)?))
                .map_err(|e| e.to_string());
            prop_assert_eq!(&direct, &eager, "script {} on {}", script, as_json);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The VM keeps the keys and texts of the last status built; items built after others (of other fields,
    /// other texts) still match their JSON form.
    #[test]
    fn items_built_after_others_in_one_vm_match_their_json_form(
        earlier in prop::collection::vec(item(), 0..4),
        items in prop::collection::vec(item(), 0..4),
    ) {
        let as_json = serde_json::to_value(&items).expect("items serialize");
        let lua = Lua::new();
        let eager = eager_to_lua(&lua, &as_json)
            .and_then(|v| eager_from_lua(&lua, v))
            .map_err(|e| e.to_string());
        let lua = Lua::new();
        built(&lua, &earlier, |_| Ok(())).expect("earlier items");
        let direct = built(&lua, &items, |v| from_lua(&lua, v)).map_err(|e| e.to_string());
        prop_assert_eq!(&direct, &eager, "after {:?}", earlier);
    }
}

#[test]
fn members_reporting_the_same_fields_with_other_texts_keep_their_own() {
    let items: Vec<AggregatedStatusItem> = ["a", "b", "a"]
        .iter()
        .enumerate()
        .map(|(i, revision)| AggregatedStatusItem {
            cluster_name: format!("member{i}"),
            status: Some(
                serde_json::json!({"replicas": i, "updateRevision": revision, "ready": true}),
            ),
            applied: true,
            ..AggregatedStatusItem::default()
        })
        .collect();
    let lua = Lua::new();
    let revisions = built(&lua, &items, |list| {
        let out = run(
            &lua,
            "local out = {} for i, item in ipairs(obj) do out[i] = item.status.updateRevision .. item.status.replicas end return out",
            list,
        )?;
        from_lua(&lua, out)
    })
    .expect("script");
    assert_eq!(revisions, serde_json::json!(["a0", "b1", "a2"]));
}

/// Small statuses reuse the keys of the last one built: keys that are not plain names (quotes, backslashes,
/// line breaks, Lua keywords, other scripts, empty) come back as they were, and so do many shapes in turn.
#[test]
fn status_keys_of_any_text_and_many_shapes_come_back_as_they_were() {
    let odd = serde_json::json!({"a\"b": 1, "back\\slash": "x\"y", "line\nbreak": true, "end": 2.5,
                                 "9lives": "n", "": "empty", "ключ": "значение", "nul\u{0}": null});
    let mut items = vec![AggregatedStatusItem {
        cluster_name: "odd".into(),
        status: Some(odd.clone()),
        ..AggregatedStatusItem::default()
    }];
    items.extend((0..80).map(|i| AggregatedStatusItem {
        cluster_name: format!("member{i}"),
        status: Some(serde_json::json!({format!("field{i}"): i, "shared": "same"})),
        applied: i % 2 == 0,
        ..AggregatedStatusItem::default()
    }));
    let lua = Lua::new();
    for _ in 0..2 {
        let back = built(&lua, &items, |v| from_lua(&lua, v)).expect("items");
        let expected = eager_to_lua(
            &lua,
            &serde_json::to_value(&items).expect("items serialize"),
        )
        .and_then(|v| eager_from_lua(&lua, v))
        .expect("eager");
        assert_eq!(back, expected);
        assert_eq!(back[0]["status"]["back\\slash"], "x\"y");
    }
}
