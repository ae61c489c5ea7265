/* main.c: the shardproof command line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gen/gen.h"
#include "import/cli_import.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: shardproof COMMAND [ARGS]\n"
            "\n"
            "commands:\n"
            "  check FILE [--plan NAME] [-j N] [--format text|json|sarif|junit] [--dot OUT]\n"
            "        [--seed N] [--dims NAME=SIZE,...] [--max-terms N] [--max-degree N]\n"
            "        [--max-splits N] [--max-ms N] [--max-coeff-bits N] [--max-elements N]\n"
            "        [--max-ranks N] [--max-nodes N] [--max-input-bytes N] [--max-tokens N]\n"
            "        [--max-ident N] [--max-depth N] [--shapes N]\n"
            "        [--probabilistic [K]]  (EQUAL from K agreeing fingerprints when a limit\n"
            "        stops an exact proof; the report states the error bound)\n"
            "        [--infer-lineage]  (cut where plan tensors match model tensors)\n"
            "        prove that the plan computes what the model computes\n"
            "  check --nnscaler LOGICAL.json PARALLEL.json [-o OUT.sp] [check options]\n"
            "        import a pair of nnScaler plans (TrainVerify's tvplan JSON) and check it\n"
            "        (explain --nnscaler ... likewise; docs/nnscaler.md)\n"
            "  check --torch FILE.py --world N [-o OUT.sp] [check options]\n"
            "        capture a PyTorch file's single() and parallel(rank, world) steps and check\n"
            "        them (docs/torch.md)\n"
            "  torch FILE.py --world N [-o OUT.sp]\n"
            "        capture a PyTorch file and write the generated plan file\n"
            "  smt2 FILE DIR [--plan NAME] [--dims ...]\n"
            "        write every stage's query as SMT-LIB2 (for Z3 / cvc5) into DIR\n"
            "  explain FILE [--plan NAME] [--dims ...]\n"
            "        print the reduced shapes, cut points and stages without proving\n"
            "  import nnscaler LOGICAL.json PARALLEL.json [-o OUT.sp]\n"
            "        convert a pair of nnScaler plans into a model and a plan (docs/nnscaler.md)\n"
            "  gen llama3|deepseek3 [--preset P] [--layers N] [--dp N] [--tp N] [--sp] [--cp N]\n"
            "        [--pp N] [--vpp N] [--nm N] [--ep N] [--zero 0|1|2|3] [--optim sgd|adam]\n"
            "        [--bug NAME|list] [--variant NAME] [-o OUT] ...  (gen --help: every option)\n"
            "        write a model and a plan of a built-in family (docs/workloads.md)\n"
            "  check FILE --shard I/N [options]  (a deterministic subset of the stage groups;\n"
            "        writes a partial report, JSON, for merge: one job of a Slurm array or MPI run)\n"
            "  merge PART.json... [--format text|json|sarif|junit] [--dot OUT] [-j N]\n"
            "        combine the partial reports of every shard into the report of the whole check\n"
            "  equiv FILE [--seed N] [--smt2 DIR]\n"
            "        decide each query 'LHS == RHS' (or '[a, b] == [c, d]') of FILE exactly\n"
            "  version\n"
            "\n"
            "exit codes: 0 equivalent, 1 not equivalent, 2 bad input or usage,\n"
            "            3 unknown or limit hit, 4 internal error\n");
}

int main(int argc, char **argv)
{
    sp_cli_install_abort_hook();
    sp_cli_install_test_allocator();
    if (argc < 2) {
        usage(stderr);
        return SP_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "check") == 0 || strcmp(cmd, "explain") == 0) {
        int explain = cmd[0] == 'e';
        if (sp_cli_nnscaler_requested(argc - 2, argv + 2))
            return sp_cli_check_nnscaler(argc - 2, argv + 2, explain);
        if (sp_cli_torch_requested(argc - 2, argv + 2))
            return sp_cli_check_torch(argc - 2, argv + 2, explain);
        return sp_cli_check(argc - 2, argv + 2, explain);
    }
    if (strcmp(cmd, "import") == 0)
        return sp_cli_import(argc - 2, argv + 2);
    if (strcmp(cmd, "torch") == 0)
        return sp_cli_torch(argc - 2, argv + 2);
    if (strcmp(cmd, "smt2") == 0)
        return sp_cli_check(argc - 2, argv + 2, 2);
    if (strcmp(cmd, "gen") == 0)
        return sp_gen_main(argc - 2, argv + 2);
    if (strcmp(cmd, "equiv") == 0)
        return sp_cli_equiv(argc - 2, argv + 2);
    if (strcmp(cmd, "merge") == 0)
        return sp_cli_merge(argc - 2, argv + 2);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("shardproof %s\n", SP_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "shardproof: error: unknown command '%s'\n", cmd);
    usage(stderr);
    return SP_EXIT_USAGE;
}
