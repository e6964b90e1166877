//! Choosing subflows: what several schedulers share (the out-of-tree kernel's
//! `get_available_subflow` and its reinjection step, the "fast" subflow BLEST, ECF and
//! MPTCP-SF compare with). A scheduler reaches them as `crate::sched::NAME`.

use crate::cc::CaState;
use crate::sched::{Decision, Reason, SchedCtx, SubflowSet, SubflowView};

/// Among available subflows, the one with the lowest srtt (ties to the lower index), optionally
/// excluding a set. Subflows without an RTT sample yet rank as srtt = 0, as in the kernel.
///
/// A backup subflow only when no regular one could carry the segment even later: a regular
/// subflow that is merely out of window space is waited for (the out-of-tree
/// `get_available_subflow` returns nothing when a regular subflow is only temporarily
/// unavailable, its `force` case); backups serve once every regular one is gone, still joining
/// or potentially failed (recovering from a timeout).
pub fn lowest_rtt_available(views: &[SubflowView], exclude: SubflowSet) -> Option<usize> {
    // One pass, as this runs at every decision: the best available regular and backup
    // subflows (index 0 and 1), and whether a regular one is alive.
    let mut best: [Option<&SubflowView>; 2] = [None, None];
    let mut regular_alive = false;
    for v in views.iter().filter(|v| !exclude.contains(v.id)) {
        regular_alive |= !v.backup && v.established && v.ca_state != CaState::Loss;
        if v.available() {
            let b = &mut best[usize::from(v.backup)];
            if b.is_none_or(|b| (v.srtt, v.id) < (b.srtt, b.id)) {
                *b = Some(v);
            }
        }
    }
    best[usize::from(!regular_alive)].map(|v| v.id)
}

/// Where a segment sent before goes again (a reinjection, the out-of-tree meta socket's
/// retransmission): the out-of-tree `get_available_subflow` with the segment's path mask
/// `sent_on`. The lowest-RTT regular subflow that has not carried it; if a regular subflow that
/// has not carried it is only out of window space, none yet; then the same among backup
/// subflows; and when every subflow that could take it has carried it already, the kernel
/// clears the mask and chooses again among all (its `restart`), so a segment stuck behind dead
/// subflows still finds a live one. `exclude` is never chosen (a scheduler's own limits).
pub fn reinjection_subflow(
    views: &[SubflowView],
    sent_on: SubflowSet,
    exclude: SubflowSet,
) -> Option<usize> {
    let unused = SubflowSet(sent_on.0 | exclude.0);
    if let Some(sf) = lowest_rtt_available(views, unused) {
        return Some(sf);
    }
    // Waiting is right while a subflow that could still take it unused is merely busy.
    let waits = views
        .iter()
        .any(|v| v.established && v.ca_state != CaState::Loss && !unused.contains(v.id));
    if waits || sent_on.is_empty() {
        return None;
    }
    lowest_rtt_available(views, exclude)
}

/// Whether the subflows in use are the backup ones: only when no regular subflow is
/// established and out of timeout recovery (see `lowest_rtt_available`).
pub fn backups_in_use(views: &[SubflowView]) -> bool {
    !views
        .iter()
        .any(|v| !v.backup && v.established && v.ca_state != CaState::Loss)
}

/// The established subflow with the lowest srtt among those in use (regular, or backup when
/// no regular one can carry data): the "fast" subflow BLEST, ECF and MPTCP-SF compare with.
/// A subflow recovering from a timeout is not in use: its srtt describes a path that stopped
/// answering, and waiting for it would wait for good if the path is gone. (The out-of-tree
/// ports of BLEST and ECF take the lowest srtt over every established subflow, timed-out
/// ones included, and so wait at the end of a file behind a dead fast path; the papers'
/// "fastest subflow" is one that carries data.)
pub fn fastest_in_use(views: &[SubflowView]) -> Option<&SubflowView> {
    let backup = backups_in_use(views);
    views
        .iter()
        .filter(|v| v.established && v.ca_state != CaState::Loss && v.backup == backup)
        .min_by_key(|v| (v.srtt, v.id))
}

/// The reinjection step shared by the LowRTT family: the oldest queued segment goes on the
/// fastest available subflow that has not carried it (`reinjection_subflow`).
#[inline]
pub fn next_reinjection(ctx: &SchedCtx) -> Option<Decision> {
    for dseq in ctx.reinject_queue() {
        let sent = ctx.sent_on(dseq);
        if let Some(sf) = reinjection_subflow(ctx.subflows(), sent, SubflowSet::EMPTY) {
            return Some(Decision {
                dseq,
                subflows: SubflowSet::one(sf),
                reason: Reason::Reinjection,
            });
        }
    }
    None
}
