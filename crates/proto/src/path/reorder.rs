//! Reordering tolerance of one path (`ConnectionConfig::reorder_tolerance`): RACK's adaptive
//! reordering window (RFC 8985 §6.2), spurious-loss detection, and the bookkeeping of the
//! undo of a congestion response that proved spurious (RFC 4015 §2, Linux
//! `tcp_try_undo_recovery` / `tcp_undo_cwnd_reduction`).
//!
//! - **Spurious losses.** A path never reuses a packet number, so an acknowledgement of a
//!   packet the path declared lost proves the declaration spurious: the original arrived
//!   (what DSACK or timestamps tell a TCP, RFC 3708 / RFC 3522, comes free here). The path
//!   keeps a record of the packets its packet or time threshold declared lost, for a
//!   retransmission timeout after each declaration (and at most [`MAX_LOST_RECORDS`]). The
//!   peer reports a late arrival until the sender's ACK_FLOOR passes it, which leaves about
//!   one RTT after the declaration: a packet reordered by more than about an RTT is not
//!   recognised (RFC 8985 caps its reordering window at SRTT too). The floor is not held
//!   back for the records: ACKs stay exactly as without the option.
//! - **Reordering window** (RFC 8985 §6.2 steps 2 and 4): reordering is *seen* when an ACK
//!   newly acknowledges a packet below the largest already acknowledged, or proves a loss
//!   spurious. Until then the window is 0 and loss detection is exactly RFC 9002's packet
//!   threshold (RFC 8985 §6.2: "RACK.reordering_seen is FALSE … return 0", the DupThresh
//!   emulation). Afterwards a packet past the packet threshold is lost only once it was
//!   sent `RACK.rtt + reo_wnd` ago, `reo_wnd = min(reo_wnd_mult · min_RTT/4, SRTT)`; each
//!   round trip with a spurious loss raises `reo_wnd_mult` by one (at most once per round:
//!   RFC 8985's `dsack_round`), and after [`REO_WND_PERSIST`] recovery episodes without one
//!   it falls back to 1.
//! - **Undo.** Each congestion response the losses of a recovery episode caused keeps the
//!   window from before it and the number of those losses not yet proven spurious; when the
//!   last is, the controller restores its state
//!   ([`CongestionControl::on_spurious_congestion`](crate::cc::CongestionControl::on_spurious_congestion)).
//!   A retransmission timeout, a penalisation or a loss the scheme declared in the episode
//!   makes it final.

use crate::cc::Window;
use crate::time::{Duration, Instant};
use std::collections::VecDeque;

/// Most declared-lost packets a path remembers (the oldest record goes first).
pub const MAX_LOST_RECORDS: usize = 1024;

/// Recovery episodes without a spurious loss after which the reordering window multiplier
/// falls back to 1 (RFC 8985 §6.2 step 4, `RACK.reo_wnd_persist` = 16).
pub const REO_WND_PERSIST: u32 = 16;

/// Largest reordering window multiplier kept (the window is capped at SRTT anyway).
const MAX_MULT: u32 = 1 << 16;

/// A packet the path declared lost by its threshold, remembered to recognise its late
/// acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LostRecord {
    pub(crate) pn: u64,
    pub(crate) declared: Instant,
    /// The recovery episode its loss belongs to.
    pub(crate) episode: u64,
}

/// The undo state of the path's latest recovery episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Undo {
    /// The window before the episode's reduction.
    pub(crate) prior: Window,
    /// Losses of the episode not yet proven spurious.
    pub(crate) pending: u64,
    pub(crate) episode: u64,
}

/// What a late acknowledgement of a declared-lost packet implies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spurious {
    /// Counted; the episode still has losses not proven spurious (or none to undo).
    Counted,
    /// The last loss of the episode proved spurious: undo to this window.
    Undo(Window),
}

/// Reordering state of one path (see the module documentation).
#[derive(Debug, Clone)]
pub(crate) struct Reordering {
    /// `RACK.reordering_seen`.
    pub(crate) seen: bool,
    /// `RACK.reo_wnd_mult`.
    pub(crate) mult: u32,
    /// `RACK.reo_wnd_persist`.
    pub(crate) persist: u32,
    /// `RACK.dsack_round`: the multiplier was raised this round, which ends when a packet
    /// numbered at least this is acknowledged.
    pub(crate) dsack_round: Option<u64>,
    /// Packets declared lost by threshold, in increasing packet number.
    pub(crate) lost: VecDeque<LostRecord>,
    /// Current recovery episode (incremented by each congestion response).
    pub(crate) episode: u64,
    /// Threshold losses that start a new episode, since the last congestion response.
    pub(crate) next_losses: u64,
    /// A loss that cannot be proven spurious starts the next episode.
    pub(crate) next_final: bool,
    pub(crate) undo: Option<Undo>,
    /// RACK's reordering timer (RFC 8985 §6.2 step 5): when the oldest packet past the
    /// packet threshold, held back by the window, becomes lost.
    pub(crate) deadline: Option<Instant>,
}

impl Default for Reordering {
    fn default() -> Self {
        Reordering {
            seen: false,
            mult: 1,
            persist: 0,
            dsack_round: None,
            lost: VecDeque::new(),
            episode: 0,
            next_losses: 0,
            next_final: false,
            undo: None,
            deadline: None,
        }
    }
}

impl Reordering {
    /// RFC 8985 §6.2 step 4 (`RACK_update_reo_wnd`'s result): 0 until reordering is seen
    /// (the packet threshold alone decides), else `min(mult · min_rtt / 4, srtt)`.
    pub(crate) fn reo_wnd(&self, min_rtt: Option<Duration>, srtt: Option<Duration>) -> Duration {
        if !self.seen {
            return Duration::ZERO;
        }
        let (Some(min_rtt), Some(srtt)) = (min_rtt, srtt) else {
            return Duration::ZERO;
        };
        Duration::from_nanos(min_rtt.as_nanos() / 4)
            .saturating_mul(u64::from(self.mult))
            .min(srtt)
    }

    /// Packet `pn` was newly acknowledged while `largest_acked` was the largest packet
    /// acknowledged before this ACK (RFC 8985 §6.2 step 2: reordering is seen when a packet
    /// is delivered below one delivered earlier); also ends `dsack_round` once the round's
    /// packets are acknowledged (step 4).
    pub(crate) fn on_acked(&mut self, pn: u64, largest_acked: Option<u64>) {
        if largest_acked.is_some_and(|l| pn < l) {
            self.seen = true;
        }
        if self.dsack_round.is_some_and(|r| pn >= r) {
            self.dsack_round = None;
        }
    }

    /// A threshold loss of `pn` declared at `now`; `congestion`: it starts a new episode
    /// (sent after the current one began).
    pub(crate) fn on_lost(&mut self, pn: u64, now: Instant, congestion: bool) {
        let episode = if congestion {
            self.next_losses += 1;
            self.episode + 1
        } else {
            if let Some(u) = &mut self.undo {
                if u.episode == self.episode {
                    u.pending += 1;
                }
            }
            self.episode
        };
        if self.lost.len() == MAX_LOST_RECORDS {
            self.lost.pop_front();
        }
        debug_assert!(self.lost.back().is_none_or(|r| r.pn < pn));
        self.lost.push_back(LostRecord {
            pn,
            declared: now,
            episode,
        });
    }

    /// A loss whose late acknowledgement is not looked for (timeout, declared by the
    /// scheme): the episode it belongs to cannot be undone.
    pub(crate) fn on_final_loss(&mut self, congestion: bool) {
        if congestion {
            self.next_final = true;
        } else {
            self.undo = None;
        }
    }

    /// The path's congestion response to losses (`prior`: its window before): a new
    /// episode, undoable if all of its losses so far were threshold losses.
    pub(crate) fn on_congestion_response(&mut self, prior: Window) {
        self.episode += 1;
        self.persist = self.persist.saturating_sub(1);
        if self.persist == 0 {
            self.mult = 1;
        }
        self.undo = (self.next_losses > 0 && !self.next_final).then_some(Undo {
            prior,
            pending: self.next_losses,
            episode: self.episode,
        });
        self.next_losses = 0;
        self.next_final = false;
    }

    /// A congestion response that is never undone (timeout, penalisation).
    pub(crate) fn on_final_response(&mut self) {
        self.episode += 1;
        self.undo = None;
        self.next_losses = 0;
        self.next_final = false;
    }

    /// Forgets records declared longer than `keep` before `now`.
    pub(crate) fn expire(&mut self, now: Instant, keep: Duration) {
        while self
            .lost
            .front()
            .is_some_and(|r| now.saturating_since(r.declared) > keep)
        {
            self.lost.pop_front();
        }
    }

    /// The smallest packet number still remembered as lost.
    #[cfg(test)]
    pub(crate) fn oldest_lost(&self) -> Option<u64> {
        self.lost.front().map(|r| r.pn)
    }

    /// Takes the records of packets in `lo..hi` (acknowledged by an ACK range): each proves
    /// a loss spurious, except those `repaired` says the receiver rebuilt from redundancy
    /// (their losses stand: the network did lose them). `f` gets each spurious one's packet
    /// number and what it implies.
    pub(crate) fn take_acked(
        &mut self,
        lo: u64,
        hi: u64,
        next_pn: u64,
        mut repaired: impl FnMut(u64) -> bool,
        mut f: impl FnMut(u64, Spurious),
    ) {
        let start = self.lost.partition_point(|r| r.pn < lo);
        let end = self.lost.partition_point(|r| r.pn < hi);
        if start == end {
            return;
        }
        let taken: Vec<LostRecord> = self.lost.drain(start..end).collect();
        for r in taken {
            if !repaired(r.pn) {
                let pn = r.pn;
                f(pn, self.on_spurious(r, next_pn));
            }
        }
    }

    /// The loss of record `r` proved spurious (`next_pn`: the path's next packet number,
    /// which ends the round of a multiplier increase).
    fn on_spurious(&mut self, r: LostRecord, next_pn: u64) -> Spurious {
        self.seen = true;
        // RFC 8985 §6.2 step 4: one increase per round trip with spurious losses.
        if self.dsack_round.is_none() {
            self.dsack_round = Some(next_pn);
            self.mult = (self.mult + 1).min(MAX_MULT);
        }
        self.persist = REO_WND_PERSIST;
        if r.episode > self.episode {
            // The loss starts an episode whose response has not been taken yet (same ACK).
            self.next_losses = self.next_losses.saturating_sub(1);
            return Spurious::Counted;
        }
        match &mut self.undo {
            Some(u) if u.episode == r.episode => {
                u.pending = u.pending.saturating_sub(1);
                if u.pending == 0 {
                    let prior = u.prior;
                    self.undo = None;
                    Spurious::Undo(prior)
                } else {
                    Spurious::Counted
                }
            }
            _ => Spurious::Counted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }
    fn at(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000_000)
    }
    fn w(c: u64) -> Window {
        Window {
            cwnd: c,
            ssthresh: u64::MAX,
        }
    }

    #[test]
    fn window_is_zero_until_reordering_is_seen_then_a_quarter_min_rtt() {
        let mut r = Reordering::default();
        assert_eq!(r.reo_wnd(Some(ms(80)), Some(ms(100))), Duration::ZERO);
        r.on_acked(10, Some(9));
        assert!(!r.seen, "in order is no reordering");
        r.on_acked(8, Some(10));
        assert!(r.seen);
        // RFC 8985 §6.2: min_RTT / 4 · reo_wnd_mult (1), capped at SRTT.
        assert_eq!(r.reo_wnd(Some(ms(80)), Some(ms(100))), ms(20));
        assert_eq!(r.reo_wnd(Some(ms(80)), Some(ms(10))), ms(10));
    }

    #[test]
    fn spurious_losses_raise_the_window_once_per_round_and_it_decays_after_16_episodes() {
        let mut r = Reordering::default();
        for pn in [5, 6, 7] {
            r.on_lost(pn, at(0), pn == 5);
        }
        r.on_congestion_response(w(100));
        // Two spurious losses in one round: one increase (dsack_round).
        r.take_acked(5, 7, 50, |_| false, |_, _| {});
        assert_eq!(r.mult, 2);
        assert_eq!(r.reo_wnd(Some(ms(80)), Some(ms(200))), ms(40));
        // The round ends when packet 50 is acknowledged; the next spurious loss raises again.
        r.on_acked(49, None);
        r.take_acked(7, 8, 60, |_| false, |_, _| {});
        assert_eq!(r.mult, 2, "same round");
        r.on_acked(50, None);
        r.on_lost(70, at(1), true);
        r.on_congestion_response(w(100));
        r.take_acked(70, 71, 80, |_| false, |_, _| {});
        assert_eq!(r.mult, 3);
        // Capped at SRTT.
        assert_eq!(r.reo_wnd(Some(ms(80)), Some(ms(50))), ms(50));
        // 16 congestion responses without a spurious loss: back to 1.
        for i in 0..REO_WND_PERSIST {
            assert_eq!(r.mult, 3, "episode {i}");
            r.on_lost(100 + u64::from(i), at(2), true);
            r.on_congestion_response(w(100));
        }
        assert_eq!(r.mult, 1);
        assert!(r.seen, "reordering stays seen (RFC 8985 never resets it)");
    }

    #[test]
    fn undo_when_every_loss_of_the_episode_proves_spurious() {
        let mut r = Reordering::default();
        r.on_lost(10, at(0), true);
        r.on_congestion_response(w(100));
        r.on_lost(11, at(0), false); // same episode (sent before it began)
        let mut seen = Vec::new();
        r.take_acked(10, 11, 40, |_| false, |_, s| seen.push(s));
        assert_eq!(seen, [Spurious::Counted]);
        r.take_acked(11, 12, 40, |_| false, |_, s| seen.push(s));
        assert_eq!(seen, [Spurious::Counted, Spurious::Undo(w(100))]);
        assert!(r.undo.is_none() && r.lost.is_empty());
    }

    #[test]
    fn no_undo_while_one_loss_is_real_or_after_a_final_response() {
        let mut r = Reordering::default();
        r.on_lost(10, at(0), true);
        r.on_lost(11, at(0), true);
        r.on_congestion_response(w(100));
        let mut undos = 0;
        r.take_acked(
            10,
            11,
            40,
            |_| false,
            |_, s| undos += u32::from(matches!(s, Spurious::Undo(_))),
        );
        assert_eq!(undos, 0, "packet 11 is still lost");
        // A timeout ends the episode for good: 11's late ACK undoes nothing.
        r.on_final_response();
        r.take_acked(
            11,
            12,
            40,
            |_| false,
            |_, s| undos += u32::from(matches!(s, Spurious::Undo(_))),
        );
        assert_eq!(undos, 0);
        // A scheme-declared loss starting the episode makes it final too.
        r.on_lost(20, at(1), true);
        r.on_final_loss(true);
        r.on_congestion_response(w(100));
        assert!(r.undo.is_none());
        // ... and one inside the episode.
        r.on_lost(30, at(1), true);
        r.on_congestion_response(w(100));
        assert!(r.undo.is_some());
        r.on_final_loss(false);
        assert!(r.undo.is_none());
    }

    #[test]
    fn records_expire_and_are_bounded() {
        let mut r = Reordering::default();
        r.on_lost(1, at(0), true);
        r.on_lost(2, at(100), false);
        r.expire(at(150), ms(100));
        assert_eq!(r.oldest_lost(), Some(2));
        for pn in 3..3 + MAX_LOST_RECORDS as u64 {
            r.on_lost(pn, at(200), false);
        }
        assert_eq!(r.lost.len(), MAX_LOST_RECORDS);
        assert_eq!(r.oldest_lost(), Some(3));
    }
}
