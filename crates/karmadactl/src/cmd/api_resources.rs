//! `karmadactl api-resources`: the served resource types, as `kubectl api-resources` prints them.

use clap::Args;

use crate::client::ControlPlaneFlags;
use crate::printer;

#[derive(Args, Debug)]
pub struct ApiResourcesArgs {
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
    /// Only resources in this API group ("" for the core group).
    #[arg(long = "api-group")]
    pub api_group: Option<String>,
    /// `wide` adds VERBS and CATEGORIES; `name` prints `resource.group` names only.
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<ApiResourcesOutput>,
}

/// kubectl api-resources' `-o` forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ApiResourcesOutput {
    Wide,
    Name,
}

pub async fn run(args: ApiResourcesArgs) -> anyhow::Result<()> {
    let wide = args.output == Some(ApiResourcesOutput::Wide);
    let path = args.control_plane.path();
    let client = args.control_plane.client_at(&path).await?;
    let mut lists = Vec::new();
    for version in client.list_core_api_versions().await?.versions {
        lists.push(client.list_core_api_resources(&version).await?);
    }
    for group in client.list_api_groups().await?.groups {
        if let Some(preferred) = group.preferred_version.as_ref().or(group.versions.first()) {
            lists.push(
                client
                    .list_api_group_resources(&preferred.group_version)
                    .await?,
            );
        }
    }

    let mut header = vec!["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"];
    if wide {
        header.extend(["VERBS", "CATEGORIES"]);
    }
    let mut rows = Vec::new();
    for list in &lists {
        let group = list
            .group_version
            .split_once('/')
            .map(|(g, _)| g)
            .unwrap_or("");
        if args
            .api_group
            .as_deref()
            .is_some_and(|wanted| wanted != group)
        {
            continue;
        }
        for resource in list.resources.iter().filter(|r| !r.name.contains('/')) {
            if args.output == Some(ApiResourcesOutput::Name) {
                rows.push(vec![qualified_name(&resource.name, group)]);
                continue;
            }
            let mut row = vec![
                resource.name.clone(),
                resource.short_names.clone().unwrap_or_default().join(","),
                list.group_version.clone(),
                resource.namespaced.to_string(),
                resource.kind.clone(),
            ];
            if wide {
                row.push(format!("[{}]", resource.verbs.join(" ")));
                row.push(resource.categories.clone().unwrap_or_default().join(","));
            }
            rows.push(row);
        }
    }
    rows.sort();
    if args.output == Some(ApiResourcesOutput::Name) {
        for row in rows {
            println!("{}", row.concat());
        }
        return Ok(());
    }
    let mut all = vec![header.into_iter().map(str::to_string).collect()];
    all.extend(rows);
    print!("{}", printer::table(&all));
    Ok(())
}

/// A resource as `kubectl api-resources -o name` names it: `pods`, `deployments.apps`.
fn qualified_name(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_qualified_by_their_group() {
        assert_eq!(qualified_name("pods", ""), "pods");
        assert_eq!(qualified_name("deployments", "apps"), "deployments.apps");
        assert_eq!(
            qualified_name("clusters", "cluster.karmada.io"),
            "clusters.cluster.karmada.io"
        );
    }
}
