//! Bookkeeping shared by the progressive decoders (LT, RLNC): which source symbols of a block
//! are known, how many, and which became known since the caller last asked.

use std::collections::VecDeque;

/// Known source symbols of one block.
#[derive(Debug, Clone)]
pub(crate) struct Known {
    flags: Vec<bool>,
    count: usize,
    ready: VecDeque<usize>,
}

impl Known {
    /// A block of `k` symbols, none known.
    pub(crate) fn new(k: usize) -> Self {
        Known {
            flags: vec![false; k],
            count: 0,
            ready: VecDeque::new(),
        }
    }

    /// Forgets everything and resizes to `k` symbols, keeping the allocations.
    pub(crate) fn reset(&mut self, k: usize) {
        self.flags.clear();
        self.flags.resize(k, false);
        self.count = 0;
        self.ready.clear();
    }

    /// Records symbol `i` as known (once); it is then handed out by [`Known::pop`].
    pub(crate) fn mark(&mut self, i: usize) {
        if !self.flags[i] {
            self.flags[i] = true;
            self.count += 1;
            self.ready.push_back(i);
        }
    }

    /// Whether symbol `i` is known (false for an index out of range).
    pub(crate) fn contains(&self, i: usize) -> bool {
        self.flags.get(i).copied().unwrap_or(false)
    }

    /// How many symbols are known.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Whether every symbol is known.
    pub(crate) fn is_complete(&self) -> bool {
        self.count == self.flags.len()
    }

    /// The next symbol that became known, in the order they did.
    pub(crate) fn pop(&mut self) -> Option<usize> {
        self.ready.pop_front()
    }
}
