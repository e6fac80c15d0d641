//! kubectl's `-o` forms, one value enum for the commands that print objects: clap refuses any other value and
//! lists the accepted ones, so no command parses the flag by hand.

/// `-o wide|yaml|json`; without it a command prints its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// The table with more columns.
    Wide,
    Yaml,
    Json,
}

impl Output {
    /// Whether `output` asks for a table (the plain one or `wide`).
    pub fn is_table(output: Option<Self>) -> bool {
        matches!(output, None | Some(Self::Wide))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cmd::get::GetArgs;
    use crate::cmd::plan::PlanArgs;

    #[derive(Parser, Debug)]
    struct Get {
        #[command(flatten)]
        args: GetArgs,
    }

    #[derive(Parser, Debug)]
    struct Plan {
        #[command(flatten)]
        args: PlanArgs,
    }

    #[test]
    fn output_forms_are_kubectls_and_others_are_refused_with_the_accepted_ones() {
        let get = Get::try_parse_from(["get", "deployments", "-o", "wide"]).expect("wide");
        assert_eq!(get.args.output, Some(super::Output::Wide));
        let plan =
            Plan::try_parse_from(["plan", "-f", "x.yaml", "--output", "yaml"]).expect("yaml");
        assert_eq!(plan.args.output, Some(super::Output::Yaml));
        let refused = Get::try_parse_from(["get", "deployments", "-o", "table"])
            .expect_err("table is no -o form")
            .to_string();
        assert!(
            refused.contains("possible values: wide, yaml, json"),
            "{refused}"
        );
    }
}
