// The collectives of gpt2-mpi, written over MPI point-to-point messages in a fixed order so that
// every sum is taken in an order the program decides (mpi_collectives.c): the reduce-scatter
// (ring or direct), the all-gather, and the ranks' mean losses. They know nothing of the model:
// a buffer of floats cut into shards, and each rank's weight in the average.
#ifndef MPI_COLLECTIVES_H
#define MPI_COLLECTIVES_H

#include <mpi.h>
#include <stddef.h>

// messages carry at most this many floats, so that the reduction needs two
// blocks of scratch memory instead of a shard's worth, and counts fit an int
#define BLOCK_FLOATS ((size_t)1 << 20)

enum { TAG_REDUCE = 1, TAG_GATHER, TAG_LOSS, TAG_TEXT, TAG_TRACE };

// Elements [lo, hi) of a buffer, whose rows are `cols` wide.
typedef struct {
    size_t lo, hi, cols;
} Span;

// One message: elements [at, at + count) of a buffer.
typedef struct {
    size_t at;
    int count;
} Block;

// What a collective moves: a buffer's elements in R shards, cut into channels
// (partition_channels; else one): channel c's part of shard q is the blocks
// [first[c R + q], first[c R + q + 1]) in memory order. The same on every
// rank, so that a receiver cuts a shard where its sender does.
typedef struct {
    Block *blocks;
    int *first;   // (channels R + 1)
    int channels;
} Partition;

// Where a collective runs. On the main thread, between the node executor's
// runs: the rank's threads add, and MPI's waits spin. On a communication
// thread, beside the compute threads: it adds alone, and polls its messages
// with short sleeps, since MPI's busy wait would take a core from them.
typedef struct {
    int threads, poll;
} Where;

static const Where MAIN_THREAD_WAITS = {0, 0};

// The ranks taking part and what the collectives share: each rank's weight
// in the average, the reduction's scratch and the requests of one exchange.
// One per channel (channels_create): channel c moves channel c's part of
// every partition, on a communicator of its own, so that the channels' threads
// run at once without their messages meeting.
typedef struct {
    int rank, ranks;
    int direct;             // every rank sends each shard straight to its owner; else the ring
    int channel, channels;  // this one of how many; odd channels go round the ring backward
    MPI_Comm comm;
    const float *weights;   // (ranks) rank r's gradients count w_r in the average
    float *acc, *recv;      // (BLOCK_FLOATS, or the largest block if smaller) the reduction's scratch
    MPI_Request *requests;  // (collective_requests(most blocks of any partition, ranks))
} Collective;

// Fills p with shard q = pieces[q][0 .. n[q]), pieces that meet in memory
// joined and cut into blocks of at most `block` elements. Returns 0 or -1 (memory).
int partition_of(Partition *p, int R, Span *const *pieces, const int *n, size_t block);
// A partition of one range per shard: [cut[q], cut[q + 1]).
int partition_of_ranges(Partition *p, int R, const size_t *cut, size_t block);
void partition_free(Partition *p);
// Cuts whole's shards into K channels: channel c's part of shard q is slice c
// of it, its elements counted one after the other in whole's block order cut
// into K nearly equal consecutive parts [n c / K, n (c + 1) / K), in blocks of
// at most `block` elements, or with RING_BLOCKS the ring reduce-scatter's
// blocks of the channel's widest slice. Returns 0 or -1 (memory).
#define RING_BLOCKS 0
int partition_channels(Partition *p, const Partition *whole, int R, int K, size_t block);
// The partitions of a collective over c's channels (c->channels) of shards
// `shards` (either NULL: not made): the reduce-scatter's in *reduce, the
// all-gather's in *gather. 0, or -1 (memory).
int collective_partitions(const Collective *c, const Partition *shards, Partition *reduce, Partition *gather);
// Every channel's blocks.
int partition_blocks(const Partition *p, int R);
// The elements of shard q, every channel's part of it.
size_t partition_shard_elements(const Partition *p, int R, int q);
// The block size of a reduce-scatter whose widest shard has `widest` elements.
size_t reduce_block_floats(size_t widest, int direct);
// Requests to allocate for partitions of at most `most_blocks` blocks.
size_t collective_requests(int most_blocks, int ranks);

// K channels copied from `base` (rank, ranks, direct, weights), channel c with
// a communicator of its own (with K > 1 duplicated from MPI_COMM_WORLD, every
// rank in channel order; one channel keeps MPI_COMM_WORLD) and scratch for
// blocks of `scratch_floats`; no requests yet. NULL when memory is short.
Collective *channels_create(const Collective *base, int K, size_t scratch_floats);
// Frees them, their communicators and requests included (before MPI_Finalize).
void channels_free(Collective *channels);

// The collectives below move channel c->channel's part of p alone (p has
// c->channels channels): every channel of every rank must run for the whole.
// Averages the ranks' buffers into this rank's shard of buf (shard `rank` of p);
// the other shards end up holding partial sums (ring) or this rank's own values (direct).
void reduce_scatter(const Collective *c, float *buf, const Partition *p, Where where);
// Every rank's shard of buf to every other rank, in place.
void all_gather(const Collective *c, float *buf, const Partition *p, Where where);
// The ranks' values of *loss, weighted and summed in rank order, on every rank.
void reduce_losses(const Collective *c, float *loss);
// Floats this rank sends in a reduce-scatter and an all-gather of p, every channel's.
size_t reduce_scatter_sent(const Collective *c, const Partition *p);
size_t all_gather_sent(const Collective *c, const Partition *p);

#endif
