//! Cost profiles: the costs `sluice-real calibrate` measured on one machine, as a YAML file that
//! scenarios (`costs: { profile: … }`) and `--profile` take.
//!
//! A profile names the machine it was measured on. One from another machine kind (processor
//! architecture and operating system), with a value no machine has (a bandwidth of 0, a page
//! cache larger than the memory, more shared cores than the machine has) or malformed is
//! refused when it loads, with file, line and field, as scenarios are.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::ScenarioError;
use super::guard::check as check_text;
use super::validate::check_costs;
use super::{limits, read_text};
use crate::cost::CostSpec;

/// A cost profile file; see the module doc.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostProfile {
    /// The machine it was measured on.
    pub machine: Machine,
    /// How it was measured, for people: the command and what each figure came from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured: Vec<String>,
    /// The scenarios (by name) whose real runs the CPU costs were fitted to, besides the
    /// calibration programs: a fidelity report judges them apart from the held-out ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calibrated_on: Vec<String>,
    /// The costs.
    pub costs: CostSpec,
}

/// What a profile says of its machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// Processor architecture and operating system, as `x86_64-linux`.
    pub kind: String,
    /// Cores.
    pub cores: u32,
    /// Memory, MiB.
    pub memory_mib: u64,
}

impl Machine {
    /// This machine's kind.
    pub fn this_kind() -> String {
        format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS)
    }

    /// This machine: its kind, cores and memory (0 if the system does not say).
    pub fn this() -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get() as u32);
        let memory_mib =
            std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| memory_total_mib(&text)).unwrap_or(0);
        Machine { kind: Machine::this_kind(), cores, memory_mib }
    }
}

/// `MemTotal` of a `/proc/meminfo` text, in MiB.
pub fn memory_total_mib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

impl CostProfile {
    /// Reads and checks a profile file.
    pub fn load(path: &Path) -> Result<CostProfile, ScenarioError> {
        let text = read_text(path)?;
        CostProfile::parse(&path.display().to_string(), &text)
    }

    /// Parses and checks a profile's text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<CostProfile, ScenarioError> {
        check_text(text).map_err(|error| error.in_file(file))?;
        let profile: CostProfile = serde_yaml::from_str(text).map_err(|error| {
            let error = ScenarioError::from_yaml(file, text, &error);
            if error.message.ends_with("expected struct CostProfile") {
                let message = "a cost profile is a mapping of `machine:`, `measured:` and `costs:`".to_string();
                return ScenarioError { message, ..error };
            }
            error
        })?;
        profile.check(text).map_err(|error| error.in_file(file))?;
        Ok(profile)
    }

    fn check(&self, text: &str) -> Result<(), ScenarioError> {
        let about = |field: &str, message: String| Err(ScenarioError::about(text, field, message));
        let this = Machine::this_kind();
        if self.machine.kind != this {
            let message = format!(
                "measured on a `{}` machine; this one is `{this}`: calibrate here (`sluice-real calibrate`)",
                self.machine.kind
            );
            return about("machine.kind", message);
        }
        if !(1..=limits::MAX_CORES).contains(&self.machine.cores) {
            return about("machine.cores", format!("must be in 1..={}, not {}", limits::MAX_CORES, self.machine.cores));
        }
        if self.machine.memory_mib == 0 || self.machine.memory_mib > limits::MAX_PAGE_CACHE_MIB {
            let message = format!("must be in 1..={}, not {}", limits::MAX_PAGE_CACHE_MIB, self.machine.memory_mib);
            return about("machine.memory_mib", message);
        }
        if self.costs.profile.is_some() {
            return about("costs.profile", "a profile holds costs, not another profile".to_string());
        }
        check_costs(&self.costs, text, 1)?;
        if self.costs.page_cache_mib > self.machine.memory_mib {
            let message = format!(
                "a page cache of {} MiB is larger than the machine's memory ({} MiB)",
                self.costs.page_cache_mib, self.machine.memory_mib
            );
            return about("costs.page_cache_mib", message);
        }
        if let Some(cores) = self.costs.shared_machine_cores.filter(|cores| *cores > self.machine.cores) {
            let message = format!("{cores} shared cores on a machine of {}", self.machine.cores);
            return about("costs.shared_machine_cores", message);
        }
        Ok(())
    }

    /// The profile as YAML that [`CostProfile::parse`] reads back.
    pub fn to_yaml(&self) -> String {
        let mut text = String::from("# A cost profile: what `sluice-real calibrate` measured on one machine.\n");
        text.push_str(&serde_yaml::to_string(self).expect("a cost profile always serializes"));
        text
    }
}

/// If a scenario's `costs:` names a profile, replaces them with the profile's (found relative to
/// `scenario_file`). Nothing else may be set beside `profile`.
pub(crate) fn resolve(costs: &mut CostSpec, scenario_file: &str, text: &str) -> Result<(), ScenarioError> {
    let Some(path) = costs.profile.clone() else { return Ok(()) };
    let in_scenario = |message: String| ScenarioError::about(text, "costs.profile", message).in_file(scenario_file);
    if *costs != (CostSpec { profile: Some(path.clone()), ..CostSpec::default() }) {
        return Err(in_scenario("with `profile`, every cost comes from the profile; set nothing else".to_string()));
    }
    let base = Path::new(scenario_file).parent().unwrap_or(Path::new(""));
    let profile =
        CostProfile::load(&base.join(&path)).map_err(|error| in_scenario(format!("cost profile `{path}`: {error}")))?;
    *costs = profile.costs;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile_text(kind: &str, costs: &str) -> String {
        format!("machine:\n  kind: {kind}\n  cores: 2\n  memory_mib: 8000\ncosts:\n{costs}")
    }

    fn refusal(kind: &str, costs: &str) -> String {
        CostProfile::parse("p.yaml", &profile_text(kind, costs)).unwrap_err().to_string()
    }

    #[test]
    fn a_profile_reads_back_what_it_wrote() {
        let text = profile_text(
            &Machine::this_kind(),
            "  cpu:\n    scan: 250ns\n  page_cache_mib: 1000\n  memory_mib_per_second: 5000\n",
        );
        let profile = CostProfile::parse("p.yaml", &text).unwrap();
        assert_eq!(profile.costs.cpu.scan, Some(std::time::Duration::from_nanos(250)));
        assert_eq!(CostProfile::parse("p.yaml", &profile.to_yaml()).unwrap(), profile);
    }

    #[test]
    fn profiles_from_elsewhere_or_with_impossible_values_are_refused_with_line_and_field() {
        let this = Machine::this_kind();
        assert_eq!(
            refusal("riscv64-plan9", "  disk_mib_per_second: 100\n"),
            format!(
                "p.yaml:2: field `machine.kind`: measured on a `riscv64-plan9` machine; this one is `{this}`: \
                 calibrate here (`sluice-real calibrate`)"
            )
        );
        assert_eq!(
            refusal(&this, "  disk_mib_per_second: 0\n"),
            "p.yaml:6: field `costs.disk_mib_per_second`: must be in 1..=1000000, not 0"
        );
        assert!(
            refusal(&this, "  network_mib_per_second: -5\n")
                .starts_with("p.yaml:6: field `costs.network_mib_per_second`")
        );
        assert_eq!(
            refusal(&this, "  page_cache_mib: 9000\n  memory_mib_per_second: 1000\n"),
            "p.yaml:6: field `costs.page_cache_mib`: a page cache of 9000 MiB is larger than the machine's memory (8000 MiB)"
        );
        assert!(
            refusal(&this, "  cpu:\n    scam: 1us\n").contains("unknown field `scam`"),
            "{}",
            refusal(&this, "  cpu:\n    scam: 1us\n")
        );
        assert!(refusal(&this, "  deploy_task: fast\n").contains("field `costs.deploy_task`"));
        assert_eq!(
            refusal(&this, "  shared_machine_cores: 3\n"),
            "p.yaml:6: field `costs.shared_machine_cores`: 3 shared cores on a machine of 2"
        );
        let not_a_mapping = CostProfile::parse("p.yaml", "- 1\n").unwrap_err().to_string();
        assert!(not_a_mapping.contains("a cost profile is a mapping"), "{not_a_mapping}");
    }

    #[test]
    fn memory_is_read_from_meminfo() {
        assert_eq!(memory_total_mib("MemTotal:        8126464 kB\nMemFree: 1 kB\n"), Some(7936));
        assert_eq!(memory_total_mib("nothing"), None);
    }
}
