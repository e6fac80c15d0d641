//! Table-driven tests of the PriorityClass, StorageClass, IngressClass, PodTemplate and
//! NetworkPolicy rules, run on defaulted objects through `validate_builtin` as the server does.

use serde_json::{Map, Value, json};

use crate::defaults::validation::tests::{assert_valid, problems};

fn check(cases: Vec<(&str, Value, Vec<&str>)>) {
    for (kind, obj, expected) in cases {
        assert_eq!(problems(kind, obj.clone(), None), expected, "{kind}: {obj}");
    }
}

const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const INVALID_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

#[test]
fn valid_objects_have_no_problems() {
    let cases = [
        (
            "PriorityClass",
            json!({"metadata": {"name": "high"}, "value": 1_000_000_000}),
        ),
        (
            "PriorityClass",
            json!({"metadata": {"name": "low"}, "value": -5, "preemptionPolicy": "Never"}),
        ),
        (
            "PriorityClass",
            json!({"metadata": {"name": "system-node-critical"}, "value": 2_000_001_000}),
        ),
        (
            "StorageClass",
            json!({"provisioner": "ebs.csi.aws.com", "parameters": {"type": "gp3"}}),
        ),
        (
            // The provisioner is checked lower-cased.
            "StorageClass",
            json!({"provisioner": "Example.COM/csi", "reclaimPolicy": "Retain",
                   "volumeBindingMode": "WaitForFirstConsumer"}),
        ),
        (
            "IngressClass",
            json!({"spec": {"controller": "k8s.io/ingress-nginx"}}),
        ),
        (
            "IngressClass",
            json!({"spec": {"controller": "example.com/lb", "parameters": {"apiGroup": "k8s.example.com",
                   "kind": "IngressParameters", "name": "external-lb", "scope": "Namespace", "namespace": "ops"}}}),
        ),
        (
            "PodTemplate",
            json!({"template": {"metadata": {"labels": {"app": "web"}},
                   "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}),
        ),
        ("NetworkPolicy", json!({"spec": {"podSelector": {}}})),
        (
            "NetworkPolicy",
            json!({"spec": {"podSelector": {"matchLabels": {"role": "db"}}, "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [{"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}},
                                      {"namespaceSelector": {"matchLabels": {"project": "p"}},
                                       "podSelector": {"matchLabels": {"role": "frontend"}}}],
                             "ports": [{"protocol": "TCP", "port": 6379}]}],
                "egress": [{"to": [{"ipBlock": {"cidr": "2001:db8::/64"}}],
                            "ports": [{"port": 32000, "endPort": 32768}, {"port": "dns", "protocol": "UDP"}]}]}}),
        ),
    ];
    assert_valid(cases);
}

#[test]
fn priority_classes() {
    let reserved = "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: ";
    let unknown = format!("{reserved}system-custom is not a known system priority class");
    let wrong_value =
        format!("{reserved}value of system-cluster-critical PriorityClass must be 2000000000");
    let not_default =
        format!("{reserved}globalDefault of system-node-critical PriorityClass must be false");
    check(vec![
        (
            "PriorityClass",
            json!({"metadata": {"name": "huge"}, "value": 1_000_000_001, "preemptionPolicy": "Sometimes"}),
            vec![
                "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
                "preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\"",
            ],
        ),
        (
            "PriorityClass",
            json!({"metadata": {"name": "system-custom"}, "value": 5}),
            vec![&unknown],
        ),
        (
            "PriorityClass",
            json!({"metadata": {"name": "system-cluster-critical"}, "value": 1}),
            vec![&wrong_value],
        ),
        (
            "PriorityClass",
            json!({"metadata": {"name": "system-node-critical"}, "value": 2_000_001_000, "globalDefault": true}),
            vec![&not_default],
        ),
    ]);
}

#[test]
fn storage_classes() {
    let many: Map<String, Value> = (0..513).map(|i| (format!("k{i}"), json!("v"))).collect();
    check(vec![
        (
            "StorageClass",
            json!({"provisioner": "", "reclaimPolicy": "Recycle", "volumeBindingMode": "Later"}),
            vec![
                "provisioner: Required value",
                "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
                "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
            ],
        ),
        (
            "StorageClass",
            json!({"provisioner": "bad provisioner!", "parameters": {"": "x"}}),
            vec![
                &format!("provisioner: Invalid value: \"bad provisioner!\": {NAME_PART}"),
                "parameters: Invalid value: \"\": field can not be empty.",
            ],
        ),
        (
            "StorageClass",
            json!({"provisioner": "p", "parameters": {"big": "x".repeat(256 * 1024)}}),
            vec!["parameters: Too long: must have at most 262144 bytes"],
        ),
        (
            "StorageClass",
            json!({"provisioner": "p", "parameters": many}),
            vec!["parameters: Too long: must have at most 512 bytes"],
        ),
    ]);
}

#[test]
fn ingress_classes() {
    let params = |patch: Value| {
        let mut parameters = json!({"kind": "K", "name": "n"});
        if let (Some(target), Value::Object(patch)) = (parameters.as_object_mut(), patch) {
            target.extend(patch);
        }
        json!({"spec": {"controller": "example.com/c", "parameters": parameters}})
    };
    check(vec![
        (
            "IngressClass",
            json!({"spec": {}}),
            vec!["spec.controller: Required value"],
        ),
        (
            "IngressClass",
            json!({"spec": {"controller": "nginx"}}),
            vec![
                "spec.controller: Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")",
            ],
        ),
        (
            "IngressClass",
            json!({"spec": {"controller": "Example.com/a b"}}),
            vec![
                &format!("spec.controller: Invalid value: \"Example.com\": {SUBDOMAIN}"),
                "spec.controller: Invalid value: \"a b\": Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
            ],
        ),
        (
            "IngressClass",
            json!({"spec": {"controller": format!("example.com/{}", "a".repeat(240))}}),
            vec!["spec.controller: Too long: must have at most 250 bytes"],
        ),
        (
            "IngressClass",
            params(
                json!({"apiGroup": "Bad_Group", "kind": "", "name": "a/b", "scope": "Namespace"}),
            ),
            vec![
                &format!("spec.parameters.apiGroup: Invalid value: \"Bad_Group\": {SUBDOMAIN}"),
                "spec.parameters.kind: Required value",
                "spec.parameters.name: Invalid value: \"a/b\": may not contain '/'",
                "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'",
            ],
        ),
        (
            "IngressClass",
            params(json!({"name": "..", "namespace": "ops"})),
            vec![
                "spec.parameters.name: Invalid value: \"..\": may not be '..'",
                "spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'",
            ],
        ),
        (
            "IngressClass",
            params(json!({"scope": "Global"})),
            vec![
                "spec.parameters.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespace\"",
            ],
        ),
        (
            "IngressClass",
            params(json!({"scope": "Namespace", "namespace": "Ops"})),
            vec![
                "spec.parameters.namespace: Invalid value: \"Ops\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ],
        ),
    ]);
}

#[test]
fn pod_templates() {
    check(vec![
        (
            "PodTemplate",
            json!({"template": {"metadata": {"labels": {"bad key": "ok"}},
                   "spec": {"restartPolicy": "Sometimes", "containers": [{"name": "c", "image": "b"}]}}}),
            vec![
                &format!("template.labels: Invalid value: \"bad key\": {NAME_PART}"),
                "template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            ],
        ),
        (
            "PodTemplate",
            json!({"template": {"spec": {}}}),
            vec!["template.spec.containers: Required value"],
        ),
    ]);
}

#[test]
fn network_policy_ports_and_types() {
    check(vec![
        (
            "NetworkPolicy",
            json!({"spec": {"podSelector": {}, "ingress": [{"ports": [
                {"protocol": "ICMP", "port": 0}, {"port": "http-alt-very-long", "endPort": 90},
                {"endPort": 80}, {"port": 100, "endPort": 99}, {"port": 80, "endPort": 70000}]}]}}),
            vec![
                "spec.ingress[0].ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\"",
                "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ingress[0].ports[1].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
                "spec.ingress[0].ports[1].port: Invalid value: \"http-alt-very-long\": must be no more than 15 characters",
                "spec.ingress[0].ports[2].endPort: Invalid value: 80: may not be specified when `port` is not specified",
                "spec.ingress[0].ports[3].endPort: Invalid value: 99: must be greater than or equal to `port`",
                "spec.ingress[0].ports[4].endPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            ],
        ),
        (
            "NetworkPolicy",
            json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress", "Sideways"]}}),
            vec![
                "spec.policyTypes[1]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\"",
            ],
        ),
        (
            "NetworkPolicy",
            json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress", "Ingress"]}}),
            vec![
                "spec.policyTypes: Invalid value: [\"Ingress\",\"Egress\",\"Ingress\"]: may not specify more than two policyTypes",
            ],
        ),
    ]);
}

#[test]
fn network_policy_peers() {
    let to = |peers: Value| json!({"spec": {"podSelector": {}, "egress": [{"to": peers}]}});
    check(vec![
        (
            "NetworkPolicy",
            to(
                json!([{}, {"ipBlock": {"cidr": "10.0.0.0/16"}, "podSelector": {}},
                      {"ipBlock": {"cidr": "10.0.0.0/33"}},
                      {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24", "10.0.0.0/16", "bogus"]}},
                      {"ipBlock": {"cidr": ""}}]),
            ),
            vec![
                "spec.egress[0].to[0]: Required value: must specify a peer",
                "spec.egress[0].to[1]: Forbidden: may not specify both ipBlock and another peer",
                &format!(
                    "spec.egress[0].to[2].ipBlock.cidr: Invalid value: \"10.0.0.0/33\": {INVALID_CIDR}"
                ),
                "spec.egress[0].to[3].ipBlock.except[0]: Invalid value: \"10.1.0.0/24\": must be a strict subset of `cidr`",
                "spec.egress[0].to[3].ipBlock.except[1]: Invalid value: \"10.0.0.0/16\": must be a strict subset of `cidr`",
                &format!(
                    "spec.egress[0].to[3].ipBlock.except[2]: Invalid value: \"bogus\": {INVALID_CIDR}"
                ),
                "spec.egress[0].to[4].ipBlock.cidr: Required value",
            ],
        ),
        (
            "NetworkPolicy",
            json!({"spec": {"podSelector": {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
                   "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "bad value!"}}}]}]}}),
            // The selector parser's message names the sub-field; upstream puts it in the path.
            vec![
                "spec.podSelector: Invalid value: {\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[]}]}: matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.ingress[0].from[0].namespaceSelector: Invalid value: {\"matchLabels\":{\"team\":\"bad value!\"}}: matchLabels: values[0][team]: Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ],
        ),
    ]);
}

#[test]
fn update_rules() {
    let storage = json!({"provisioner": "a.io/x", "parameters": {"type": "gp2"}});
    let cases: Vec<(&str, Value, Value, Vec<&str>)> = vec![
        (
            "PriorityClass",
            json!({"metadata": {"name": "p"}, "value": 10}),
            json!({"metadata": {"name": "p", "labels": {"a": "b"}}, "value": 10}),
            vec![],
        ),
        (
            "PriorityClass",
            json!({"metadata": {"name": "p"}, "value": 10}),
            json!({"metadata": {"name": "p"}, "value": 11, "preemptionPolicy": "Never"}),
            vec![
                "value: Forbidden: may not be changed in an update.",
                "preemptionPolicy: Invalid value: \"Never\": field is immutable",
            ],
        ),
        ("StorageClass", storage.clone(), storage.clone(), vec![]),
        (
            "StorageClass",
            storage,
            json!({"provisioner": "b.io/x", "parameters": {"type": "gp3"}, "reclaimPolicy": "Retain",
                   "volumeBindingMode": "WaitForFirstConsumer"}),
            vec![
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
                "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
                "volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable",
            ],
        ),
        (
            "IngressClass",
            json!({"spec": {"controller": "a.io/x"}}),
            json!({"spec": {"controller": "b.io/x"}}),
            vec!["spec.controller: Invalid value: \"b.io/x\": field is immutable"],
        ),
    ];
    for (kind, old, new, expected) in cases {
        assert_eq!(
            problems(kind, new.clone(), Some(old)),
            expected,
            "{kind}: {new}"
        );
    }
}
