// The inter-workgroup hop, measured alone (issue 44, `reap bench hop`): a
// ping-pong between two workgroups and a chain of workgroups, each handing a
// flag word to the next through storage atomics. Twin of kernels/bench/hop.cu;
// the host is src/bench/hop/ (keep the word layout in sync).
//
// Every wait is bounded: an invocation may poll at most P.a times in all
// (lavapipe silently ends loops past 65,535 iterations, and a GPU that does
// not run the other side must not hang), and an exhausted or cut-short wait
// is reported in words[ERR], never timed as a result.

// u32 words per 128 bytes: every flag sits on a line of its own.
const LINE: u32 = 32u;
// words[ERR]: the first failure (0 none, HOP_BOUND, HOP_CUT).
const ERR: u32 = 0u;
// words[DONE]: workgroups that finished their part.
const DONE: u32 = 32u;
// words[NEXT_ID]: the chain's dynamic workgroup ids.
const NEXT_ID: u32 = 64u;
// The first flag; flag k is at FLAGS + k * LINE.
const FLAGS: u32 = 128u;
// The ping-pong's second flag, 1 KiB after the first.
const PONG: u32 = FLAGS + 8u * LINE;

// The spin bound ran out: the awaited workgroup never published.
const HOP_BOUND: u32 = 1u;
// The loop ended before its bound without seeing the flag: the driver cut it short.
const HOP_CUT: u32 = 2u;
// Another invocation failed first: stop quietly.
const HOP_ABANDONED: u32 = 3u;
const HOP_SEEN: u32 = 0u;

// Invocations of a chain workgroup that poll the predecessor's flag.
override POLLERS: u32 = 1u;
// Poll with atomicOr(x, 0) (a read-modify-write) instead of atomicLoad.
override RMW: bool = false;

fn poll(at: u32) -> u32 {
    if (RMW) {
        return atomicOr(&words[at], 0u);
    }
    return atomicLoad(&words[at]);
}

// Polls words[at] until it equals `want`, spending polls from `left`.
fn wait_for(at: u32, want: u32, left: ptr<function, u32>) -> u32 {
    for (; *left > 0u; *left -= 1u) {
        if (poll(at) == want) {
            return HOP_SEEN;
        }
        // Now and then, whether someone else gave up: then the flag may never come.
        if ((*left & 255u) == 0u && atomicLoad(&words[ERR]) != 0u) {
            return HOP_ABANDONED;
        }
    }
    if (*left == 0u) {
        return HOP_BOUND;
    }
    return HOP_CUT;
}

fn fail(code: u32) {
    if (code != HOP_ABANDONED) {
        atomicMax(&words[ERR], code);
    }
}

// Two workgroups, P.cap round trips: invocation 0 of workgroup 0 stores i to
// the first flag and waits for the second to read i; workgroup 1 waits for the
// first, then stores i to the second.
@compute @workgroup_size(WG)
fn pingpong(inv: Invocation) {
    if (inv.lid != 0u) {
        return;
    }
    let me = group_index(inv.wg, inv.nwg);
    var left = P.a;
    for (var i = 1u; i <= P.cap; i++) {
        if (me == 0u) {
            atomicStore(&words[FLAGS], i);
            let r = wait_for(PONG, i, &left);
            if (r != HOP_SEEN) {
                fail(r);
                return;
            }
        } else {
            let r = wait_for(FLAGS, i, &left);
            if (r != HOP_SEEN) {
                fail(r);
                return;
            }
            atomicStore(&words[PONG], i);
        }
    }
    atomicAdd(&words[DONE], 1u);
}

var<workgroup> chain_id: u32;

// A chain of P.cap workgroups in the order they take ids (so a workgroup
// waits only for one that was scheduled before it: running or done):
// workgroup k waits until flag k-1 reads k, then stores k + 1 to flag k.
@compute @workgroup_size(WG)
fn chain(inv: Invocation) {
    if (inv.lid == 0u) {
        chain_id = atomicAdd(&words[NEXT_ID], 1u);
    }
    let k = workgroupUniformLoad(&chain_id);
    if (k >= P.cap || inv.lid >= POLLERS) {
        return;
    }
    if (k > 0u) {
        var left = P.a;
        let r = wait_for(FLAGS + (k - 1u) * LINE, k, &left);
        // A failed wait still publishes, so the rest of the chain ends at once.
        if (r != HOP_SEEN && inv.lid == 0u) {
            fail(r);
        }
    }
    if (inv.lid == 0u) {
        atomicStore(&words[FLAGS + k * LINE], k + 1u);
        atomicAdd(&words[DONE], 1u);
    }
}
