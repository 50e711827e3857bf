//! [`SlotPool`]: the slots the JobMaster knows of, and bulk allocation.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

/// A slot of a TaskManager.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SlotId {
    /// The TaskManager's name.
    pub task_manager: String,
    /// The slot's index on it.
    pub index: u32,
}

impl fmt::Display for SlotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/s{}", self.task_manager, self.index)
    }
}

/// The slots of the registered TaskManagers; see the module doc.
#[derive(Clone, Debug, Default)]
pub struct SlotPool {
    task_managers: BTreeMap<String, (u32, BTreeSet<u32>)>,
}

impl SlotPool {
    /// Adds a TaskManager with all its slots free (replacing an earlier registration).
    pub fn add_task_manager(&mut self, name: &str, slots: u32) {
        self.task_managers.insert(name.to_string(), (slots, (0..slots).collect()));
    }

    /// Removes a TaskManager and its slots.
    pub fn remove_task_manager(&mut self, name: &str) {
        self.task_managers.remove(name);
    }

    /// Slots of all registered TaskManagers.
    pub fn total_slots(&self) -> u32 {
        self.task_managers.values().map(|(total, _)| total).sum()
    }

    /// Slots not allocated.
    pub fn free_slots(&self) -> u32 {
        self.task_managers.values().map(|(_, free)| free.len() as u32).sum()
    }

    /// Registered TaskManagers, by name.
    pub fn task_manager_count(&self) -> usize {
        self.task_managers.len()
    }

    /// Allocates `count` slots, or none if fewer are free. Spreads over TaskManagers: each slot
    /// comes from the TaskManager with the most free slots (ties: by name).
    pub fn allocate_bulk(&mut self, count: u32) -> Option<Vec<SlotId>> {
        let free_before = self.free_slots();
        if free_before < count {
            return None;
        }
        let mut allocated = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let (name, (total, free)) = self
                .task_managers
                .iter_mut()
                .filter(|(_, (_, free))| !free.is_empty())
                // max_by_key returns the last maximum; reversing makes it the first by name.
                .rev()
                .max_by_key(|(_, (_, free))| free.len())
                .expect("enough free slots were checked");
            let index = free.pop_first().expect("non-empty");
            assert!(index < *total, "scheduler invariant: slot {name}/s{index} exists");
            allocated.push(SlotId { task_manager: name.clone(), index });
        }
        assert_eq!(
            self.free_slots(),
            free_before - count,
            "scheduler invariant: a bulk allocation takes {count} distinct free slots"
        );
        Some(allocated)
    }

    /// Returns a slot; a slot of a TaskManager that is gone is ignored.
    pub fn release(&mut self, slot: &SlotId) {
        if let Some((total, free)) = self.task_managers.get_mut(&slot.task_manager) {
            assert!(slot.index < *total, "internal: slot {slot} does not exist");
            assert!(free.insert(slot.index), "internal: slot {slot} released twice");
        }
    }

    /// Frees every slot (restart-all cancels everything).
    pub fn release_all(&mut self) {
        for (total, free) in self.task_managers.values_mut() {
            *free = (0..*total).collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_allocation_is_all_or_nothing_and_spreads() {
        let mut pool = SlotPool::default();
        pool.add_task_manager("tm-0", 2);
        pool.add_task_manager("tm-1", 2);
        assert_eq!(pool.allocate_bulk(5), None);
        assert_eq!(pool.free_slots(), 4, "a failed bulk request allocates nothing");
        let slots = pool.allocate_bulk(3).unwrap();
        let names: Vec<String> = slots.iter().map(ToString::to_string).collect();
        assert_eq!(names, vec!["tm-0/s0", "tm-1/s0", "tm-0/s1"]);
        pool.release(&slots[1]);
        assert_eq!(pool.free_slots(), 2);
        pool.remove_task_manager("tm-0");
        pool.release(&slots[0]);
        assert_eq!(pool.total_slots(), 2);
    }

    #[test]
    #[should_panic(expected = "released twice")]
    fn double_release_is_a_bug() {
        let mut pool = SlotPool::default();
        pool.add_task_manager("tm-0", 1);
        let slot = pool.allocate_bulk(1).unwrap().remove(0);
        pool.release(&slot);
        pool.release(&slot);
    }
}
