//! MultiPathRecord queries (IBA vol1 §15.2.5.20, SubnAdmGetMulti): PathRecords between sets of
//! source and destination GIDs — OpenSM's behaviour (`osm_sa_multipath_record.c`), on the
//! PathRecord rules of the parent module (each pair is answered as a PathRecord query with the
//! MultiPathRecord's shared components, [`MultiPathRecordRepr::path_query`]).
//!
//! - SGIDCount and DGIDCount are required components (else ERR_REQ_INSUFFICIENT_COMPONENTS);
//!   Rate, MTU and ServiceID are validated as for a PathRecord.
//! - Every GID must be link-local or carry the subnet prefix, a source GID must not be
//!   multicast, and its GUID must be a port of the subnet: else ERR_REQ_INVALID_GID. No
//!   source or no destination: ERR_REQ_INVALID. OpenSM reads at most 11 GIDs (one MAD's worth)
//!   and ignores the rest; here every GID the counts announce is read (a longer request comes
//!   by RMPP), and a request that announces more GIDs than it carries is ERR_REQ_INVALID.
//! - Two sources, two destinations and NumbPath 2 is the APM request: sources and
//!   destinations each sorted by GUID, one path per combination starting at a LID offset
//!   hashed from the first source's and destination's base LIDs (offset + 1 for the second
//!   source), and the diagonal ({S0→D0, S1→D1} or {S0→D1, S1→D0}) with the shorter shortest
//!   path is answered (OpenSM `mpr_rcv_get_apm_paths`).
//! - Otherwise every source × destination pair in request order, each pair's LID pairs in the
//!   PathRecord preference order, until NumbPath paths (127 without NumbPath) are found.
//!
//! The answer is the PathRecords (attribute PathRecord in the SubnAdmGetMultiResp, o15-0.2.7).

use ibmad::sa::status as sa_status;
use ibmad::sa_rec::multipath::{comp, MultiPathRecordRepr};
use ibmad::{Gid, Lid, PortNum, Status};

use super::{comp as pr_comp, is_link_local, validate, PathCtx, PathRequest, Query, NONE};

/// The most paths answered when the query has no NumbPath (OpenSM
/// `OSM_SA_MPR_MAX_NUM_PATH`).
pub const MAX_PATHS: usize = 127;

/// A MultiPathRecord query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiPathRequest {
    /// ComponentMask (MultiPathRecord bits).
    pub comp_mask: u64,
    /// The request record.
    pub record: MultiPathRecordRepr,
    /// The requester's LID.
    pub requester: Lid,
}

/// Answers a MultiPathRecord query, appending PathRecords (64 bytes each) to `out`.
///
/// # Errors
/// The SA status for an invalid request (see the module docs).
pub fn answer_multi_into(
    ctx: &PathCtx<'_>,
    req: &MultiPathRequest,
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let cm = req.comp_mask;
    if cm & (comp::SGID_COUNT | comp::DGID_COUNT) != comp::SGID_COUNT | comp::DGID_COUNT {
        return Err(sa_status::REQ_INSUFFICIENT_COMPONENTS);
    }
    let (mut record, pr_mask) = req.record.path_query(cm);
    validate(pr_mask, &record)?;
    let ix = ctx.index;
    let requester = ix
        .end_by_lid(req.requester.0)
        .ok_or(sa_status::REQ_INVALID)?;
    let ends = |gids: &[Gid], source: bool| -> Result<Vec<u32>, Status> {
        gids.iter()
            .map(|g| {
                let multicast = g.0[0] == 0xFF;
                if !is_link_local(g)
                    && ((source && multicast) || g.prefix() != ctx.config.subnet_prefix)
                {
                    return Err(sa_status::REQ_INVALID_GID);
                }
                ix.by_guid
                    .get(&g.guid())
                    .copied()
                    .ok_or(sa_status::REQ_INVALID_GID)
            })
            .collect()
    };
    let srcs = ends(&req.record.sgids, true)?;
    let dsts = ends(&req.record.dgids, false)?;
    if srcs.is_empty() || dsts.is_empty() {
        return Err(sa_status::REQ_INVALID);
    }
    let max = if cm & comp::NUMB_PATH != 0 {
        usize::from(record.numb_path)
    } else {
        MAX_PATHS
    };
    let mut q = Query {
        ctx,
        req: &PathRequest {
            get: false,
            comp_mask: pr_mask,
            record,
            requester: req.requester,
        },
        requester,
        out,
        count: 0,
    };
    if srcs.len() == 2 && dsts.len() == 2 && record.numb_path == 2 {
        apm(&mut q, [srcs[0], srcs[1]], [dsts[0], dsts[1]]);
        return Ok(());
    }
    for &s in &srcs {
        for &d in &dsts {
            if q.count >= max {
                return Ok(());
            }
            // This pair may add what is left.
            record.numb_path = u8::try_from(max - q.count).unwrap_or(u8::MAX);
            let pair_req = PathRequest {
                comp_mask: pr_mask | pr_comp::NUMB_PATH,
                record,
                ..*q.req
            };
            let mut p = Query {
                ctx,
                req: &pair_req,
                requester,
                out: q.out,
                count: q.count,
            };
            p.pair(s, d);
            q.count = p.count;
        }
    }
    Ok(())
}

/// OpenSM's `hash_lids`.
fn hash_lids(a: u16, b: u16, lmc: u8) -> usize {
    ((usize::from(a >> lmc) << 4) | usize::from(b >> lmc)) % 103
}

/// The APM answer (see the module docs).
fn apm(q: &mut Query<'_, '_>, mut srcs: [u32; 2], mut dsts: [u32; 2]) {
    let ix = q.ctx.index;
    let guid = |e: u32| ix.ends.get(e as usize).map(|p| p.guid);
    let lid = |e: u32| ix.ends.get(e as usize).map(|p| (p.lid, p.lmc));
    srcs.sort_by_key(|&e| guid(e));
    dsts.sort_by_key(|&e| guid(e));
    let (Some((sl, lmc)), Some((dl, _))) = (lid(srcs[0]), lid(dsts[0])) else {
        return;
    };
    let base = if sl < dl {
        hash_lids(sl, dl, lmc)
    } else {
        hash_lids(dl, sl, lmc)
    };
    // m[i][j]: the path from source i to destination j, with its hop count.
    let m = [0usize, 1].map(|i| [0usize, 1].map(|j| apm_pair(q, srcs[i], dsts[j], base + i)));
    let diag = |a: &Option<(Vec<u8>, u8)>, b: &Option<(Vec<u8>, u8)>| {
        let hops: Vec<u8> = [a, b].into_iter().flatten().map(|p| p.1).collect();
        (
            hops.iter().copied().min().unwrap_or(0),
            hops.iter().map(|&h| u32::from(h)).sum::<u32>(),
        )
    };
    let (min_a, sum_a) = diag(&m[0][0], &m[1][1]);
    let (min_b, sum_b) = diag(&m[0][1], &m[1][0]);
    // OpenSM: `minA <= minB || (minA == minB && sumA < sumB)`.
    let pick = if min_a <= min_b || (min_a == min_b && sum_a < sum_b) {
        [&m[0][0], &m[1][1]]
    } else {
        [&m[0][1], &m[1][0]]
    };
    for (rec, _) in pick.into_iter().flatten() {
        q.out.extend_from_slice(rec);
        q.count += 1;
    }
}

/// The first qualifying LID pair from `s` to `d`, starting at LID offset `offs` of each and
/// stepping both (OpenSM `mpr_rcv_get_apm_port_pair_paths`): the record and the path's
/// switch hops.
fn apm_pair(q: &Query<'_, '_>, s: u32, d: u32, offs: usize) -> Option<(Vec<u8>, u8)> {
    let ix = q.ctx.index;
    let r = q.requester;
    if !(q.share_pkey(r, s) && q.share_pkey(r, d) && q.share_pkey(s, d)) {
        return None;
    }
    let (smin, smax) = ix.ends.get(s as usize)?.lid_range();
    let (dmin, dmax) = ix.ends.get(d as usize)?.lid_range();
    if smin == 0 || dmin == 0 {
        return None;
    }
    let (ns, nd) = (usize::from(smax - smin) + 1, usize::from(dmax - dmin) + 1);
    let (mut so, mut doff) = (offs % ns, offs % nd);
    for _ in 0..ns.min(nd) {
        let (slid, dlid) = (smin + so as u16, dmin + doff as u16);
        let mut rec = Vec::new();
        let mut one = Query {
            ctx: q.ctx,
            req: q.req,
            requester: r,
            out: &mut rec,
            count: 0,
        };
        if one.lid_pair(s, d, slid, dlid, 0) {
            return Some((rec, hops(q.ctx, s, d, dlid)));
        }
        so = (so + 1) % ns;
        doff = (doff + 1) % nd;
    }
    None
}

/// Switches the LID-routed path from end `s` to end `d`'s LID `dlid` crosses.
fn hops(ctx: &PathCtx<'_>, s: u32, d: u32, dlid: u16) -> u8 {
    let ix = ctx.index;
    let (Some(se), Some(de)) = (ix.ends.get(s as usize), ix.ends.get(d as usize)) else {
        return 0;
    };
    let mut node = if se.switch {
        se.node
    } else {
        match ctx.subnet.port(se.node, se.port).and_then(|p| p.remote) {
            Some((n, _)) if ctx.subnet.node(n).is_switch() => n,
            _ => return 0, // CA to CA, or no link
        }
    };
    let mut hops = 0u8;
    while hops < super::MAX_HOPS {
        hops += 1;
        if node == de.node || ix.slot_of_node.get(node.idx()).is_none_or(|&x| x == NONE) {
            break;
        }
        let Some(out) = ctx.lfts.get(node, Lid(dlid)).filter(|p| *p != PortNum(0)) else {
            break;
        };
        match ctx.subnet.port(node, out).and_then(|p| p.remote) {
            Some((n, _)) if n != de.node && ctx.subnet.node(n).is_switch() => node = n,
            _ => break,
        }
    }
    hops
}
