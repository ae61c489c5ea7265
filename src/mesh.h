/* mesh.h: device meshes, layouts (sharding, replication, pending reductions) and collectives. */
#ifndef SP_MESH_H
#define SP_MESH_H

#include <stdint.h>

#include "ops.h"

#define SP_MAX_AXES 8

/* A mesh: named axes with sizes; ranks are row-major over the axes in declared order. */
typedef struct {
    int naxes;
    char name[SP_MAX_AXES][64];
    int64_t size[SP_MAX_AXES];
    int64_t real[SP_MAX_AXES]; /* the mesh statement's size; differs from size only for an axis
                                  the mesh cutoff checks smaller (0: as size) */
    int64_t nranks;
} sp_mesh_t;

int sp_mesh_axis(const sp_mesh_t *m, const char *name);   /* index or -1 */
int64_t sp_mesh_coord(const sp_mesh_t *m, int64_t rank, int axis);
int64_t sp_mesh_with_coord(const sp_mesh_t *m, int64_t rank, int axis, int64_t c);
/* "(dp=0, tp=1)" into buf. */
void sp_mesh_rank_str(const sp_mesh_t *m, int64_t rank, char *buf, size_t len);

/* Axes listed major to minor, as in S@(cp,sp) or all_reduce(x, sum, (dp,tp)). */
typedef struct {
    int n;
    int axis[SP_MAX_AXES];
} sp_axes_t;

/* Number of ranks in a group over the axes, and a rank's index within its group. */
int64_t sp_axes_count(const sp_mesh_t *m, const sp_axes_t *a);
/* The group's size at the real mesh (the value a collective's avg divides by), and whether the
   group has an axis the mesh cutoff checks smaller */
int64_t sp_axes_real_count(const sp_mesh_t *m, const sp_axes_t *a);
int sp_axes_cut(const sp_mesh_t *m, const sp_axes_t *a);
int64_t sp_axes_index(const sp_mesh_t *m, const sp_axes_t *a, int64_t rank);
/* The rank of the group member with index k (same coordinates as rank off the axes). */
int64_t sp_axes_member(const sp_mesh_t *m, const sp_axes_t *a, int64_t rank, int64_t k);

typedef enum { SP_RED_SUM = 0, SP_RED_AVG, SP_RED_MAX, SP_RED_MIN } sp_red_t;
int sp_red_parse(const char *s, sp_red_t *out);
const char *sp_red_name(sp_red_t r);

/*
 * A resolved layout of a logical tensor of shape size[0..ndim):
 *   dim d sharded over axes[d] (none: replicated), in chunks by the torch.chunk ceil rule or by
 *   the explicit sizes split[d] (one per group member, summing to size[d]);
 *   pending reductions partial[k]: the logical value is op over the axes of the local values.
 */
typedef struct {
    int ndim;
    int64_t size[SP_MAX_DIMS];
    sp_axes_t axes[SP_MAX_DIMS];
    int64_t *split[SP_MAX_DIMS]; /* owned; NULL when not explicit */
    int64_t nsplit[SP_MAX_DIMS];
    int npartial;
    sp_red_t pop[SP_MAX_AXES];
    sp_axes_t paxes[SP_MAX_AXES];
} sp_layout_t;

void sp_layout_init(sp_layout_t *L);
void sp_layout_clear(sp_layout_t *L);
void sp_layout_copy(sp_layout_t *dst, const sp_layout_t *src);

/* The [start, end) range of dim d held by rank. */
void sp_layout_range(const sp_mesh_t *m, const sp_layout_t *L, int d, int64_t rank, int64_t *start,
                     int64_t *end);
/* The local shape on rank. */
void sp_layout_local_shape(const sp_mesh_t *m, const sp_layout_t *L, int64_t rank, int64_t *shape);
/* Slice the logical tensor down to rank's shard (ignores partial reductions). */
int sp_layout_project(const sp_mesh_t *m, const sp_layout_t *L, int64_t rank,
                      const sp_tensor_t *full, sp_tensor_t *local);

/*
 * Collectives over the ranks of `in` (in[r] for every rank r of the mesh; ranks with
 * in[r].ndim < 0 do not participate, and a group must participate as a whole).  out[] has
 * nranks entries, initialised by the caller.  Semantics follow NCCL / torch.distributed with
 * group order = rank order on the axes (major to minor).  Return 1, or 0 with a message in err.
 */
int sp_coll_all_reduce(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, sp_red_t op,
                       const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err);
int sp_coll_all_gather(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, int dim,
                       const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err);
int sp_coll_reduce_scatter(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, int dim,
                           sp_red_t op, const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err);
int sp_coll_all_to_all(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, int split_dim,
                       int concat_dim, const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err);
int sp_coll_broadcast(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, int64_t root,
                      const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err);
int sp_coll_reduce(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, sp_red_t op, int64_t root,
                   const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err);

/* Elementwise reduction of the n tensors of one group, in member order (sum, avg, max, min):
   avg divides by nreal, the group's size at the real mesh.  cut: the group has an axis the mesh
   cutoff checks smaller; its sums are then sums over an axis for the count test (SP_NODE_AXSUM),
   except the sum of a whole decomposition of a pending reduction (src/plan.c distribute), which
   is its value (docs/soundness.md, "Mesh cutoff"). */
int sp_reduce_tensors(sp_ectx_t E, sp_red_t op, const sp_tensor_t *const *t, int64_t n,
                      int64_t nreal, int cut, sp_tensor_t *out, sp_op_err_t *err);

#endif
