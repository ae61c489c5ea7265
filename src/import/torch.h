/* torch.h: run the PyTorch capture front end (the Python package shardproof_torch). */
#ifndef SP_IMPORT_TORCH_H
#define SP_IMPORT_TORCH_H

#include <stddef.h>

/* The largest --world: the capture runs one process per rank (a gloo world on this machine). */
#define SP_TORCH_MAX_WORLD 64

/*
 * Capture FILE.py (its single() and parallel(rank, world) functions) and write the generated
 * plan file to out (a path).  Runs $SHARDPROOF_PYTHON (default /usr/bin/python3) on the package
 * found in $SHARDPROOF_TORCH_PATH, else next to the binary: <bindir>/../lib/shardproof/python
 * (make install) or <bindir>/../../src/torch (a build directory of the source tree).  The
 * package prints its own diagnostics on stderr.  Returns 0, 2 (bad input, torch missing, the
 * capture refused the code: the message says why) or 4 (internal error); err gets a message for
 * failures found before Python runs.
 */
int sp_torch_capture(const char *file, int world, const char *out, char *err, size_t errlen);

#endif
