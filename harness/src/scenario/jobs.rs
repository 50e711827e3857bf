//! [`JobCatalog`]: the jobs a scenario may name, with what the harness needs to feed and judge
//! each ([`SimJob`]). The `sluice` command knows the built-in ones (`sluice-catalog`); a user's
//! crate brings its own through `sluice_sim::Simulation` or [`super::Scenario::parse_with`].

use std::fmt;
use std::sync::Arc;

use sluice_catalog::SimJob;
use sluice_engine::api::JobRegistry;

/// The jobs scenarios may name; cheap to clone.
#[derive(Clone)]
pub struct JobCatalog {
    jobs: Arc<Vec<&'static SimJob>>,
}

impl JobCatalog {
    /// A catalog of `jobs`; two jobs of one name are refused.
    pub fn of(jobs: impl IntoIterator<Item = &'static SimJob>) -> Result<JobCatalog, String> {
        let jobs: Vec<&'static SimJob> = jobs.into_iter().collect();
        JobRegistry::of(jobs.iter().map(|job| job.definition))?;
        Ok(JobCatalog { jobs: Arc::new(jobs) })
    }

    /// Sluice's built-in jobs.
    pub fn built_in() -> JobCatalog {
        JobCatalog::of(sluice_catalog::jobs()).expect("internal: catalog job names are unique")
    }

    /// A job by name; the error lists the known ones.
    pub fn find(&self, name: &str) -> Result<&'static SimJob, String> {
        self.jobs.iter().copied().find(|job| job.name() == name).ok_or_else(|| {
            let known: Vec<&str> = self.jobs.iter().map(|job| job.name()).collect();
            format!("no job `{name}` in the catalog; known jobs: {}", known.join(", "))
        })
    }

    /// Every job.
    pub fn jobs(&self) -> impl Iterator<Item = &'static SimJob> + '_ {
        self.jobs.iter().copied()
    }

    /// The registry a cluster running these jobs is handed.
    pub fn registry(&self) -> JobRegistry {
        JobRegistry::of(self.jobs.iter().map(|job| job.definition)).expect("checked when the catalog was made")
    }
}

impl Default for JobCatalog {
    fn default() -> Self {
        JobCatalog::built_in()
    }
}

impl fmt::Debug for JobCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.jobs.iter().map(|job| job.name())).finish()
    }
}

/// Two catalogs are equal when they hold jobs of the same names (a job is its name to a cluster).
impl PartialEq for JobCatalog {
    fn eq(&self, other: &JobCatalog) -> bool {
        self.jobs.iter().map(|job| job.name()).eq(other.jobs.iter().map(|job| job.name()))
    }
}
