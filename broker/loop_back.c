/*
 * loop_back.c - which publishers of a log record are back.
 *
 * A record written on the loop blocks the loop while it flushes, so what
 * arrives meanwhile is received in the pass after it, mixed with the
 * publishes of the producers it has just confirmed, who come back a round
 * trip later and, over a fast transport, can be received in that same
 * pass. The record's gather (gather.c) must wait for the confirmed
 * producers plus the others already waiting; counting one that came back
 * twice (as confirmed, and again as waiting) made the next record wait for
 * a publish that would never come, until the gather's deadline: a quarter
 * of a millisecond lost, for a sequential producer one record in fourteen.
 *
 * So the loop notes each publish's peer (endpoint and routing id) in the
 * open batch; at the seal the batch becomes the record's; once the record
 * has ended, a publish from one of its peers counts as back (each peer
 * once), and the gather is told the rest as waiting. Past LOOP_BACK_PEERS
 * publishers in a batch, or with a routing id longer than
 * LOOP_BACK_RID_MAX, they are not told apart and every publish counts as
 * waiting, as before.
 *
 * Costs: a copy of the routing id per publish; a linear search of the
 * sealed peers per publish while counting (at most LOOP_BACK_PEERS, and
 * only in the pass after a record written on the loop). Pure.
 */
#include "loop_back.h"

#include <string.h>

void loop_back_put(loop_back *lb, unsigned sock, const uint8_t *rid, size_t rid_len)
{
    if (lb->watching && !lb->sealed_over)
        for (size_t i = 0; i < lb->nsealed; i++) {
            loop_peer *p = &lb->sealed[i];
            if (!p->back && p->sock == sock && p->len == rid_len && !memcmp(p->rid, rid, rid_len)) {
                p->back = 1;
                lb->back++;
                break;
            }
        }
    if (lb->nbatch == LOOP_BACK_PEERS || rid_len > LOOP_BACK_RID_MAX) {
        lb->batch_over = 1;
        return;
    }
    loop_peer *p = &lb->batch[lb->nbatch++];
    p->sock = (uint8_t)sock;
    p->len = (uint8_t)rid_len;
    p->back = 0;
    memcpy(p->rid, rid, rid_len);
}

void loop_back_seal(loop_back *lb)
{
    memcpy(lb->sealed, lb->batch, lb->nbatch * sizeof lb->batch[0]);
    lb->nsealed = lb->nbatch;
    lb->sealed_over = lb->batch_over;
    lb->nbatch = 0;
    lb->batch_over = 0;
    lb->watching = 0;
    lb->back = 0;
}

void loop_back_ended(loop_back *lb)
{
    lb->watching = 1;
    lb->back = 0;
    for (size_t i = 0; i < lb->nsealed; i++)
        lb->sealed[i].back = 0;
}

size_t loop_back_waiting(loop_back *lb, size_t waiting)
{
    size_t back = lb->sealed_over ? 0 : lb->back;
    lb->watching = 0;
    return waiting > back ? waiting - back : 0;
}
