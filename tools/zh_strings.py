"""The Chinese form of every string the generators write into a Chinese page.

Keys are the exact English strings of the generators: the templates of
tools/docs.py (its STRINGS table), the counter labels of tools/compare.py,
the alt text of tools/diagrams.py and the labels of tools/accuracy_docs.py
(by their English text), so a Chinese page reads the same words as the
English one in Chinese. Placeholders ({step}, {n}, ...) stay as they are,
and every number keeps its English position relative to the others: the
edition test compares the numbers of each generated block in order.

SUMMARIES holds line 1 of every program's source (part 1 stepN_*/reduce.cu,
part 2 rows/stepN_*/rows.cu, the baselines and extras/), which the results
tables quote in the "what changed" column.

FIGURE_KEYS holds the Chinese key that follows the access-pattern pictures
on a Chinese page: the pictures are drawn with English labels (no CJK font is
assumed where they are drawn), and figure_key() gives the text for the kinds
of pictures a page shows. tests/test_editions.py checks that every Chinese
page carries the key its pictures need.

CHART_STRINGS and CHART_PATTERNS hold the words of the results charts
(tools/plot.py and the other chart tools): `make plot` draws each chart once
more with them, in Noto Sans SC, as <name>.zh-CN.png (tools/chart_zh.py).

The words follow docs/glossary.zh-CN.md. This module imports nothing from
the repository, so any script may use it.
"""

STRINGS = {
    # multigpu/README's Measured table (tools/multigpu_docs.py)
    "| measurement | multigpu/run: one process drives every GPU | "
    "multigpu/run: one process per GPU | torch.distributed: one process per GPU |":
        "| 测量 | multigpu/run：一个进程驱动全部 GPU | multigpu/run：每块 GPU 一个进程 | "
        "torch.distributed：每块 GPU 一个进程 |",
    "all-reduce of {bytes} bytes, median us": "{bytes} 字节 all-reduce，中位数（微秒）",
    "all-reduce of 1 GiB, busbw GB/s": "1 GiB all-reduce，busbw（GB/s）",
    "speed-up of {gpus} GPUs at n = {n}": "{gpus} 块 GPU 在 n = {n} 时的加速比",
    "sum of n = {n} on {gpus} GPUs, median us": "n = {n} 时 {gpus} 块 GPU 求和，中位数（微秒）",
    "its one-GPU baseline at n = {n}, median us": "n = {n} 时它的单 GPU 基线，中位数（微秒）",
    "crossover (the GPUs ahead from n =)": "交叉点（多块 GPU 从 n = 多少起领先）",
    "{n} ({ratio}; the smallest n it ran)": "{n}（{ratio}；该设置测过的最小 n）",
    "{n} ({ratio})": "{n}（{ratio}）",
    "Each cell is the median of {rounds} rounds, the fastest and slowest in brackets.":
        "每格取 {rounds} 轮的中位数，方括号里是最快和最慢的一轮。",
    "One run, no rounds: nothing here tells a small win from a tie.":
        "只有一次运行，没有多轮：表中的数据分不清小幅领先和持平。",
    "{none}: not measured in this run. Speed-ups are against one GPU running step 9 "
    "on all n in the same run (torch's: one GPU's `torch.sum`; a process of one rank "
    "runs no one-GPU baseline, so its speed-up is taken against the one-process run's "
    "one GPU at the same n and round), with the all-reduce combine.":
        "{none}：这次运行没有测。加速比的参照是同一次运行里用一块 GPU 对全部 n 跑第 9 步"
        "（torch 一列的参照是一块 GPU 上的 `torch.sum`；每个进程只负责一个 rank 时不跑单 GPU "
        "参照，所以它的加速比取同一个 n、同一轮里单进程那次运行的一块 GPU 作参照），"
        "合并方式为 all-reduce。",
    "From {sum} and {allreduce}: {gpus} x {gpu}, NCCL {nccl}, revision {rev}.":
        "数据来自 {sum} 和 {allreduce}：{gpus} 块 {gpu}，NCCL {nccl}，代码版本 {rev}。",
    " PyTorch: {torch}, its own NCCL {nccl}.": "PyTorch：{torch}，自带 NCCL {nccl}。",
    "Not measured yet: `make nccl-check OUT_DIR=plots/reference` on a machine "
    "with two GPUs, then `make docs`.":
        "还没有测：在有两块 GPU 的机器上运行 `make nccl-check OUT_DIR=plots/reference`，"
        "再运行 `make docs`。",
    "Not computed yet: run `make variance OUT_DIR={out}` (no GPU needed).":
        "尚未计算：运行 `make variance OUT_DIR={out}`（不需要 GPU）。",
    "| rows' mean (σ = 1) | one pass: E[x²] − E[x]² | two passes | Welford | rows whose "
    "one-pass variance is ≤ 0 |":
        "| 行均值（σ = 1） | 一趟：E[x²] − E[x]² | 两趟 | Welford | 一趟算出方差 ≤ 0 的行数 |",
    "The largest relative error of a row's variance, over 1024 rows of 1024 floats with "
    "variance 1 at each mean, computed by `make variance` (tools/variance.c) in float32 "
    "on the CPU, in the warp-per-row kernel's order and with its fused multiply-adds: "
    "IEEE float32 rounds these operations the same on the GPU. Source: {source}.":
        "每个均值下取 1024 行、每行 1024 个方差为 1 的 float，表中是各行方差相对误差的最大值。"
        "数据由 `make variance`（tools/variance.c）在 CPU 上用 float32 算出，加法顺序和融合乘加"
        "都与每行一个 warp 的 kernel 相同：这些 IEEE float32 运算在 GPU 上的舍入完全一样。"
        "数据来源：{source}。",
    "The largest relative error of a row's variance against the rows' mean, three ways":
        "三种算法下，行方差的最大相对误差随行均值的变化",
    # ------------------------------------------------------------ README: results
    "Measured on {gpu} (driver {driver}, CUDA {cuda}, built with {toolchain} for {arch}, "
    "peak {peak} GB/s from the device attributes) at revision {rev}; {flush}. Every program "
    "ran in {rounds} rounds, each in its own process, in an order shuffled per round; a "
    "round's time is the median of {reps} repetitions. A table gives the median round and, "
    "in brackets, the fastest and slowest; a ratio is called a win or a loss only where the "
    "rounds of the two programs do not overlap, otherwise a tie. Source: {source}.":
        "测量于 {gpu}（驱动 {driver}，CUDA {cuda}，用 {toolchain} 为 {arch} 编译，按设备属性算出的"
        "峰值带宽为 {peak} GB/s），代码版本 {rev}；{flush}。每个程序跑 {rounds} 轮，每轮在单独的进程里"
        "运行，各轮的程序顺序随机打乱；一轮的时间是 {reps} 次重复的中位数。表中给出中位的那一轮，"
        "方括号里是最快和最慢的一轮；只有两个程序的各轮结果互不重叠时，比值才算领先或落后，否则算持平。"
        "数据来源：{source}。",
    "Measured on {gpu} (driver {driver}, CUDA {cuda}, built with {toolchain} for {arch}, "
    "peak {peak} GB/s from the device attributes) at revision {rev}; {flush}; one run of each "
    "program, the median of {reps} repetitions; a ratio is called a win or a loss only where "
    "the two runs' ranges do not overlap, otherwise a tie. Source: {source}.":
        "测量于 {gpu}（驱动 {driver}，CUDA {cuda}，用 {toolchain} 为 {arch} 编译，按设备属性算出的"
        "峰值带宽为 {peak} GB/s），代码版本 {rev}；{flush}；每个程序运行一次，取 {reps} 次重复的中位数；"
        "只有两次运行的范围互不重叠时，比值才算领先或落后，否则算持平。数据来源：{source}。",
    "progression": "每一步的实测带宽，与峰值和 CUB 对比",
    "sweep": "各步带宽随输入规模的变化",
    "vs-cub": "后面几步与 CUB 之比随 n 的变化",
    "profile": "每一步的 Nsight Compute 计数器",
    "accuracy": "各种加法方式的舍入误差随 n 的变化",
    "L2 flushed before every repetition": "每次重复前都清空 L2",
    "L2 not flushed (warm cache)": "没有清空 L2（缓存是热的）",
    "L2 flushed in some runs only (see the flush column)": "只有部分运行清空了 L2（见 flush 列）",
    "**n = {power}** ({n} floats, {size})": "**n = {power}**（{n} 个 float，{size}）",
    "| step | what changed | median us | rounds us | GB/s | % of peak | vs previous | vs step 0 "
    "| vs CUB |":
        "| 步骤 | 改动 | 中位数（微秒） | 各轮（微秒） | GB/s | 占峰值 % | 相对上一步 | 相对第 0 步 "
        "| 相对 CUB |",
    "{ratio} {verdict}": "{ratio}（{verdict}）",
    "win": "领先", "tie": "持平", "loss": "落后",
    "The seed articles (Chinese, named under Sources below; V100, their own harness, "
    "2^25 floats) report {first} us ({first_name}), {middle} and {last} us for their final "
    "version.":
        "本教程的原文（中文文章，篇名见下文“参考来源”；V100，用原文自己的测试代码，2^25 个 float）"
        "给出的时间是 {first} 微秒（{first_name}）、{middle}，最终版本为 {last} 微秒。",
    "{us} ({name})": "{us}（{name}）",
    ", ": "、",
    "| seed version | V100 us (quoted, not measured here) | speed-up over v0 |":
        "| 原文版本 | V100 上的耗时（微秒，引自原文，本项目未测） | 相对 v0 的加速比 |",

    # ------------------------------------------------------------ step pages: measured
    "| n | median us | rounds us | GB/s | % of peak | vs previous step | vs step 0 | vs CUB |":
        "| n | 中位数（微秒） | 各轮（微秒） | GB/s | 占峰值 % | 相对上一步 | 相对第 0 步 | 相对 CUB |",
    "Measured on {gpu} (driver {driver}, CUDA {cuda}) at revision {rev}, from {source}.":
        "测量于 {gpu}（驱动 {driver}，CUDA {cuda}），代码版本 {rev}，数据来自 {source}。",
    "Not measured yet: {source} has no usable rows for {step} at n = 2^25 or 2^28. "
    "`make bench` measures it beside the other steps and draws its charts in plots/results/.":
        "尚未测量：{source} 里没有 {step} 在 n = 2^25 或 2^28 时的有效数据。"
        "`make bench` 会把它和其他步骤一起测一遍，并把图表画在 plots/results/ 里。",

    # ------------------------------------------------------------ step pages: counters
    "| counter | previous ({prev}) | this step ({step}) | change |":
        "| 计数器 | 上一步（{prev}） | 本步（{step}） | 变化 |",
    "Nsight Compute, {gpu} at revision {rev}, from {source}.":
        "Nsight Compute，{gpu}，代码版本 {rev}，数据来自 {source}。",
    "No counters for {step} in {source} yet.": "还没有 {step} 的计数器数据（{source}）。",
    "No Nsight Compute counters yet: run `make profile-all`, then `make docs`.":
        "还没有 Nsight Compute 计数器数据：先运行 `make profile-all`，再运行 `make docs`。",
    "{label} ({unit})": "{label}（{unit}）",
    "GPU not recorded": "未记录 GPU",
    "not recorded": "未记录",
    "warp instructions executed": "执行的 warp 指令数",
    "threads active per warp instruction": "每条 warp 指令的活跃线程数",
    "thread instructions with the predicate on": "谓词为真的线程指令数",
    "shared-memory bank conflicts, loads": "共享内存 bank 冲突（读）",
    "shared-memory bank conflicts, stores": "共享内存 bank 冲突（写）",
    "DRAM throughput, % of peak": "DRAM 吞吐量，占峰值 %",
    "kernel duration": "kernel 执行时间",
    "achieved occupancy, % of peak warps": "实际占用率，占 warp 上限的 %",
    "lanes with the predicate on per warp instruction": "每条 warp 指令中谓词为真的 lane 数",

    # ------------------------------------------------------------ step 9: vs-cub, determinism, tried
    "| n | {prev} us | {step} us | CUB us | {step} vs {prev} | {step} vs CUB |":
        "| n | {prev}（微秒） | {step}（微秒） | CUB（微秒） | {step} 相对 {prev} | {step} 相对 CUB |",
    "Median round of {rounds} (each round the median of {reps} repetitions), L2 flushed, on "
    "{gpu}; a ratio above 1 means {step} is faster. Against CUB: {wins} wins, {ties} ties and "
    "{losses} losses over {sizes} sizes; {worst} at its slowest (n = {worst_n}); geometric "
    "mean {mean} over the powers of two from n = 2^12 to 2^22. From {source}.":
        "{rounds} 轮中位的那一轮（每轮取 {reps} 次重复的中位数），每次前都清空 L2，GPU 为 {gpu}；"
        "比值大于 1 表示 {step} 更快。与 CUB 相比：{wins} 个规模领先、{ties} 个持平、{losses} 个落后，"
        "共 {sizes} 个规模；最慢时为 {worst}（n = {worst_n}）；几何平均为 {mean}"
        "（取 n = 2^12 到 2^22 之间的各个二的幂）。数据来自 {source}。",
    "Not measured yet: {source} has no rows for {step} and CUB at the same sizes.":
        "尚未测量：{source} 里没有 {step} 和 CUB 在相同规模下的数据。",
    "| program | n | runs | different sums | median us |":
        "| 程序 | n | 运行次数 | 不同的和 | 中位数（微秒） |",
    "From {source}, on {gpu} at revision {rev} (`make determinism`).":
        "数据来自 {source}，{gpu}，代码版本 {rev}（`make determinism`）。",
    "Not measured yet: `make determinism OUT_DIR=plots/reference`, then `make docs`.":
        "尚未测量：先运行 `make determinism OUT_DIR=plots/reference`，再运行 `make docs`。",
    "| variant | {sizes} |": "| 变体 | {sizes} |",
    "Median us per n, L2 flushed, from {source} (`make tune`, on {gpu} at revision {rev}); "
    "a variant is this step with one `#define` changed.":
        "各 n 下的中位数（微秒），每次前都清空 L2，数据来自 {source}（`make tune`，{gpu}，"
        "代码版本 {rev}）；每个变体只改了本步的一个 `#define`。",
    "Not measured yet: {source} does not exist.": "尚未测量：{source} 还不存在。",
    "{step} as shipped": "{step}（仓库中的原版）",

    # ------------------------------------------------------------ step pages: diff
    "Step 0 is the starting point; there is no previous step.": "第 0 步是起点，没有上一步。",
    "{step} is the first step; there is no previous step.": "{step} 是第一步，没有上一步。",
    "There is no {step}/reduce.cu to compare yet.": "还没有可以比较的 {step}/reduce.cu。",
    "{this}/reduce.cu is identical to {prev}/reduce.cu.":
        "{this}/reduce.cu 与 {prev}/reduce.cu 完全相同。",

    # ------------------------------------------------------------ step pages: figures (alt text)
    "No access-pattern pictures for {step} yet: tools/patterns.py has no model of it.":
        "{step} 还没有访问模式图：tools/patterns.py 里没有它的模型。",
    "{step}: which of the {threads} threads ({warps} warps) of one block work at each level, "
    "and which warps issue it":
        "{step}：一个线程块的 {threads} 个线程（{warps} 个 warp）在每一层哪些在工作，"
        "以及哪些 warp 发射了这一层",
    "{step}: shared-memory bank map of each level; no bank serves two words in one request":
        "{step}：每一层的共享内存 bank 分布；一次请求里没有哪个 bank 要服务两个字",
    "{step}: shared-memory bank map of each level; the worst request puts {degree} words in "
    "one bank":
        "{step}：每一层的共享内存 bank 分布；最差的一次请求让一个 bank 服务 {degree} 个字",
    "{step}: the {levels} __shfl_down_sync levels; lane i adds lane i + offset, and only "
    "lane 0 keeps the full sum":
        "{step}：{levels} 层 __shfl_down_sync；lane i 加上 lane i + offset 的值，"
        "只有 lane 0 得到完整的和",
    "{step}: which thread loads which element, for a small grid":
        "{step}：在缩小的网格上，哪个线程加载哪个元素",
    "{step}: which thread loads which float, head, float4 body and tail, for a small grid "
    "with --offset {offset}":
        "{step}：哪个线程加载哪个 float（头部、float4 主体和尾部），网格已缩小，--offset {offset}",
    "{step}: blocks draw tickets in the order they finish; the one that draws ticket "
    "gridDim.x - 1 reads every partial sum in block order, for a small grid":
        "{step}：各线程块按完成的先后领取票号；领到票号 gridDim.x - 1 的线程块"
        "按线程块顺序读取全部部分和（网格已缩小）",

    # ------------------------------------------------------------ ACCURACY: accuracy
    # (tools/accuracy_docs.py TEXT, by its English text: their only Chinese form)
    "Not measured yet: on a machine with a GPU, `make accuracy OUT_DIR=plots/reference`"
    " writes `{source}`, then `make docs` fills this block from it.":
        "尚未测量：在有 GPU 的机器上运行 `make accuracy OUT_DIR=plots/reference`，"
        "它会写出 `{source}`，再运行 `make docs` 用它填写本节。",
    "Measured on {gpu} ({sms} SMs; driver {driver}, CUDA {cuda}) at revision {rev}."
    " Each point is one verified run (`--check`){seeds}. Error = |result − reference|"
    " / Σ|x|, where the reference is a double-precision sum; u = 2^-24 ≈ {u}."
    " Source: {source}.":
        "测量于 {gpu}（{sms} 个 SM；驱动 {driver}，CUDA {cuda}），代码版本 {rev}。"
        "每个点是一次通过验证的运行（`--check`）{seeds}。误差 = |result − reference| / Σ|x|，"
        "其中 reference 是用双精度求得的参考值；u = 2^-24 ≈ {u}。数据来源：{source}。",
    ", the median of {k} seeds up to n = {n}": "，取 {k} 个种子的中位数（n = {n} 及以下）",
    "**Relative error at n = {n}**": "**n = {n} 时的相对误差**",
    "program": "程序",
    "CPU sequential float loop": "CPU 顺序 float 循环",
    "CPU Kahan float loop": "CPU Kahan float 循环",
    "0 (exact)": "0（精确）",
    "Textbook bounds at n = {n}: sequential (n−1)u = {seq}, pairwise ⌈log2 n⌉u = {pair},"
    " Kahan 2u = {kahan}.":
        "n = {n} 时教科书给出的误差界：顺序求和 (n−1)u = {seq}，两两求和 ⌈log2 n⌉u = {pair}，"
        "Kahan 2u = {kahan}。",
    "**What each choice does to the error at n = {n}** (ratio of relative errors; below"
    " 1 means the first is more accurate)":
        "**n = {n} 时各种做法对误差的影响**（相对误差之比；小于 1 表示前者更准确）",
    "choice": "做法",
    "a chain in each thread: median of steps {chain} ÷ median of steps {tree}":
        "每个线程内的串行链：第 {chain} 步的中位数 ÷ 第 {tree} 步的中位数",
    "compensating the chain: {kahan} ÷ {base}": "对串行链做补偿：{kahan} ÷ {base}",
    "a loop instead of a tree: CPU sequential ÷ median of steps {tree}":
        "用循环代替树：CPU 顺序循环 ÷ 第 {tree} 步的中位数",
    "compensating the loop: CPU Kahan ÷ CPU sequential":
        "对循环做补偿：CPU Kahan ÷ CPU 顺序循环",
    "**What compensation costs** (timed runs, L2 flushed; per n the median of {rounds}"
    " alternating runs of each program, each the median of its repetitions)":
        "**补偿的代价**（计时运行，每次前都清空 L2；每个 n 取两个程序交替运行 {rounds} 次的中位数，"
        "每次的结果本身又是多次重复的中位数）",
    "| n | {base} us | {kahan} us | {kahan} / {base} |":
        "| n | {base}（微秒） | {kahan}（微秒） | {kahan} / {base} |",
    "No timed runs of {base} and {kahan} in the data.": "数据里没有 {base} 和 {kahan} 的计时运行。",
    "Different sums one input gave in a run's timed repetitions, each summed once more"
    " untimed: {distinct} (1 = every repetition's sum came back bit for bit).":
        "一次运行的各次计时重复里，每个输入都不计时地再算一遍，同一个输入给出的不同的和共有 {distinct} 个"
        "（1 表示每次重复的和都逐位重现）。",
    "**Same bits?**": "**结果逐位相同吗？**",
    "Run to run: {count} of {total} programs ran a second time, in a new process, on"
    " fill {fill}, n = {n}, seed {seed}, and returned the same bits.":
        "重复运行：{count}/{total} 个程序在新进程中以填充方式 {fill}、n = {n}、种子 {seed} "
        "再运行一次，结果与第一次逐位相同。",
    " Different bits: {steps}.": "结果不同的程序：{steps}。",
    "Order decides the bits: on fill {fill}, n = {n}, seed {seed} the programs returned"
    " {count} different floats; programs in one group returned the same float:":
        "加法顺序决定每一位：在填充方式 {fill}、n = {n}、种子 {seed} 下，各程序共得到 {count} 个"
        "不同的 float；同一组内的程序结果相同：",
    # ------------------------------------------------------------ part 2 (tools/rows_docs.py)
    "Part 2 at {shape} (the seed article's LayerNorm: 64 x 512 rows of 1024 floats)":
        "第 2 部分在 {shape} 上的结果（原文中的 LayerNorm：64 x 512 行，每行 1024 个 float）",
    "| program | what changed | median us | rounds us | GB/s | share of its bar | vs previous "
    "| vs PyTorch | vs torch.compile |":
        "| 程序 | 改动 | 中位数（微秒） | 各轮（微秒） | GB/s | 占参照的比例 | 相对上一步 | 相对 PyTorch "
        "| 相对 torch.compile |",
    "A row sum's bar is part 1's step 9 summing the same floats as one array; the bar of "
    "LayerNorm, softmax and the copy is the copy kernel, which moves the same bytes. vs "
    "PyTorch compares the same operation in the same run ({torch}), eager and through "
    "torch.compile (compiled once per shape before the timing).":
        "按行求和的参照是第 1 部分的第 9 步把同样多的 float 当作一个数组求和；LayerNorm、softmax "
        "和复制的参照是复制 kernel，它搬运的字节数相同。“相对 PyTorch”比较的是同一次运行中的同一种运算"
        "（{torch}），分 eager 模式和 torch.compile 两种；torch.compile 在计时前对每个形状编译一次。",
    "LayerNorm, {step}, at every shape": "LayerNorm：{step} 在各个形状上的结果",
    "| shape | MiB | copy us | {step} us | share of the copy | PyTorch us | vs PyTorch | vs "
    "torch.compile |":
        "| 形状 | MiB | 复制（微秒） | {step}（微秒） | 占复制的比例 | PyTorch（微秒） | 相对 PyTorch "
        "| 相对 torch.compile |",
    "Row sum, {step}, at every shape": "按行求和：{step} 在各个形状上的结果",
    "Softmax, {step}, at every shape": "softmax：{step} 在各个形状上的结果",
    "softmax against the copy and PyTorch, per shape": "各个形状上 softmax 与复制、PyTorch 的对比",
    "Softmax in bfloat16, {step}, at every shape": "bfloat16 的 softmax：{step} 在各个形状上的结果",
    "LayerNorm in bfloat16, {step}, at every shape": "bfloat16 的 LayerNorm：{step} 在各个形状上的结果",
    "GB/s against the width: each op's last step, the copy and PyTorch":
        "GB/s 随列宽的变化：每种运算的最后一步、复制与 PyTorch",
    "GB/s against the width: each op's last step and the copy":
        "GB/s 随列宽的变化：每种运算的最后一步与复制",
    "Part 2's map ({source}, `make bench-widths`): each op's last step beside its copy and "
    "PyTorch, eager and compiled, at 256 MiB of x from 256 to 262144 columns, where the rows "
    "halve as the width doubles.":
        "第 2 部分的全景图（{source}，`make bench-widths`）：每种运算的最后一步，与同一元素类型的复制以及 "
        "eager 模式和编译后的 PyTorch 对照；x 固定为 256 MiB，列数从 256 到 262144，列宽每翻一倍，"
        "行数就减半。",
    "Part 2's map ({source}, `make bench-widths`): each op's last step beside its copy at 256 MiB "
    "of x from 256 to 262144 columns, where the rows halve as the width doubles. PyTorch is not "
    "in this run yet.":
        "第 2 部分的全景图（{source}，`make bench-widths`）：每种运算的最后一步，与同一元素类型的复制"
        "对照；x 固定为 256 MiB，列数从 256 到 262144，列宽每翻一倍，行数就减半。这次运行还没有测 PyTorch。",
    "The map in numbers ({source}): each op's last step at each width, all in the step's own "
    "run. First its GB/s as a share of its bar's: the copy of its element type, and for the row "
    "sum part 1's step 9 reading the same 256 MiB as one array ({one} GB/s); then its speed "
    "against PyTorch's, eager and through torch.compile. A figure is the median round's "
    "({rounds} rounds, each a process of its own); a ratio is a win or a loss only where the rounds do not "
    "overlap, otherwise a tie, so a tie may carry a large ratio where the other side's rounds "
    "spread widely. The two copy rows give each copy in the newest run that timed it for itself; "
    "a share divides by the copy timed in its step's run. A width's rows are 256 MiB over a "
    "row's bytes, twice as many in bfloat16: not the bench's shapes of the tables above.":
        "用数字看全景图（{source}）：每种运算的最后一步在各个列宽上的结果，都取自这一步自己的那次运行。"
        "先看它的 GB/s 占参照的比例：参照是同一元素类型的复制，按行求和的参照则是第 1 部分的第 9 步"
        "把同样的 256 MiB 当作一个数组来读（{one} GB/s）；再看它与 PyTorch 的速度对比，分 eager 模式"
        "和 torch.compile 两种。每个数字取的是中位的那一轮（共 {rounds} 轮，每轮各在一个单独的进程里）；"
        "只有双方各轮的耗时互不重叠时，比值才算领先或落后，否则算持平，所以对方各轮波动很大时，"
        "持平的比值也可能很大。表中两行复制的数字，取自最近一次专门测它的运行；而每个比例除以的，"
        "是和那一步在同一次运行里计时的复制。每种列宽的行数是 256 MiB 除以一行的字节数，"
        "bfloat16 的行数是 float 的两倍：它们不是上面测速表格里同样列宽的那些形状。",
    "Share of the bar, by width (columns a row)": "占参照的比例，按列宽（每行的列数）",
    "Against PyTorch (eager), by width": "与 PyTorch（eager 模式）对比，按列宽",
    "Against torch.compile, by width": "与 torch.compile 对比，按列宽",
    "| op | last step | {widths} |": "| 运算 | 最后一步 | {widths} |",
    "The last steps over the table's {count} points: wins {wins}, ties {ties}, losses {losses}; "
    "from {lo} to {hi} columns, the vocabularies' widths: wins {vwins}, ties {vties}, losses "
    "{vlosses}.":
        "各最后一步在全表共 {count} 个数据点上：{wins} 个领先，{ties} 个持平，{losses} 个落后；"
        "其中列宽为 {lo} 到 {hi}（各语言模型的词表大小）的：{vwins} 个领先，{vties} 个持平，{vlosses} 个落后。",
    # tools/rows_targets.py: part 2's targets table
    "LayerNorm at 0.95x the copy's bandwidth or more, at every shape of 64 MiB or "
    "more":
        "LayerNorm 带宽达到复制的 0.95x 或更高，64 MiB 及以上的每种形状都要达到",
    "LayerNorm at 0.90x the copy or more at every shape of 64 MiB or more (step 17's "
    "issue)":
        "LayerNorm 达到复制的 0.90x 或更高，"
        "64 MiB 及以上的每种形状都要达到（第 17 步的 issue）",
    "LayerNorm at 0.90x the copy or more at 8192 x 4097 (step 13's issue)":
        "LayerNorm 带宽达到复制的 0.90x 或更高，"
        "形状为 8192 x 4097（第 13 步的 issue）",
    "LayerNorm at 1.4x PyTorch or more at 32768 x 1024":
        "LayerNorm 速度达到 PyTorch 的 1.4x 或更高，形状为 32768 x 1024",
    "LayerNorm ahead of PyTorch at every shape":
        "LayerNorm 在每种形状上都快过 PyTorch",
    "LayerNorm ahead of compiled PyTorch at every shape":
        "LayerNorm 在每种形状上都快过编译后的 PyTorch",
    "LayerNorm no slower than step 13 at any shape (step 17's issue)":
        "LayerNorm 在每种形状上都不慢于第 13 步（第 17 步的 issue）",
    "Row sum at 1.8x CUB's segmented reduce or more at 1024 columns":
        "按行求和速度达到 CUB 分段归约的 1.8x 或更高，限 1024 列的形状",
    "Row sum at 0.95x part 1's step 9 on the same floats or more":
        "按行求和读同样的 float 时，速度达到 0.95x 或更高（相对第 1 部分第 9 步）",
    "Row sum ahead of PyTorch at every shape":
        "按行求和在每种形状上都快过 PyTorch",
    "Softmax at 0.95x the copy's bandwidth or more, at every shape of 64 MiB or more":
        "softmax 带宽达到复制的 0.95x 或更高，64 MiB 及以上的每种形状都要达到",
    "Softmax at 0.90x the copy or more at every shape of 64 MiB or more (step 15's "
    "issue)":
        "softmax 达到复制的 0.90x 或更高，"
        "64 MiB 及以上的每种形状都要达到（第 15 步的 issue）",
    "Softmax at 1.5x PyTorch or more at 4096 x 8192":
        "softmax 速度达到 PyTorch 的 1.5x 或更高，形状为 4096 x 8192",
    "Softmax ahead of PyTorch at every shape":
        "softmax 在每种形状上都快过 PyTorch",
    "Softmax ahead of compiled PyTorch at every shape (step 15's issue)":
        "softmax 在每种形状上都快过编译后的 PyTorch（第 15 步的 issue）",
    "Softmax no slower than step 10 at any shape (step 15's issue)":
        "softmax 在每种形状上都不慢于第 10 步（第 15 步的 issue）",
    "bfloat16 softmax at 0.9x the bfloat16 copy or more, at every shape of 32 MiB or "
    "more":
        "bfloat16 softmax 达到 0.9x 或更高"
        "（相对 bfloat16 复制），32 MiB 及以上的每种形状都要达到",
    "bfloat16 softmax ahead of PyTorch's at every shape (step 16's issue)":
        "bfloat16 softmax "
        "在每种形状上都快过 PyTorch 的对应运算（第 16 步的 issue）",
    "bfloat16 softmax ahead of compiled PyTorch's at every shape (step 16's issue)":
        "bfloat16 softmax "
        "在每种形状上都快过编译后 PyTorch 的对应运算（第 16 步的 issue）",
    "bfloat16 softmax no slower than step 11 at any shape (step 16's issue)":
        "bfloat16 softmax 在每种形状上都不慢于第 11 步"
        "（第 16 步的 issue）",
    "bfloat16 softmax no slower than step 16 at any shape":
        "bfloat16 softmax 在每种形状上都不慢于第 16 步",
    "bfloat16 softmax no slower than step 23 at any shape":
        "bfloat16 softmax 在每种形状上都不慢于第 23 步",
    "bfloat16 LayerNorm at 0.9x the bfloat16 copy or more, at every shape of 32 MiB "
    "or more (step 17's issue)":
        "bfloat16 LayerNorm 达到 0.9x 或更高"
        "（相对 bfloat16 复制），32 MiB 及以上的每种形状都要达到（第 17 步的 issue）",
    "bfloat16 LayerNorm at 0.85x the bfloat16 copy or more at 8192 x 4097 (step 14's "
    "issue)":
        "bfloat16 LayerNorm 带宽达到 0.85x 或更高"
        "（相对 bfloat16 复制），形状为 8192 x 4097（第 14 步的 issue）",
    "bfloat16 LayerNorm at 2x PyTorch's bfloat16 layer_norm or more at 32768 x 1024":
        "bfloat16 LayerNorm 速度达到 2x 或更高"
        "（相对 PyTorch 的 bfloat16 layer_norm），形状为 32768 x 1024",
    "bfloat16 LayerNorm ahead of PyTorch's at every shape (step 17's issue)":
        "bfloat16 LayerNorm "
        "在每种形状上都快过 PyTorch 的对应运算（第 17 步的 issue）",
    "bfloat16 LayerNorm ahead of compiled PyTorch's at every shape (step 17's issue)":
        "bfloat16 LayerNorm "
        "在每种形状上都快过编译后 PyTorch 的对应运算（第 17 步的 issue）",
    "bfloat16 LayerNorm no slower than step 14 at any shape (step 17's issue)":
        "bfloat16 LayerNorm 在每种形状上都不慢于第 14 步"
        "（第 17 步的 issue）",
    "bfloat16 LayerNorm no slower than step 18 at any shape":
        "bfloat16 LayerNorm 在每种形状上都不慢于第 18 步",
    "RMSNorm at 0.95x the copy or more at every bench shape from 32768 x 1024 to "
    "4096 x 8192 (steps 19-21's issue)":
        "RMSNorm 达到复制的 0.95x 或更高，"
        "测速形状里从 32768 x 1024 到 4096 x 8192 的每一种都要达到"
        "（第 19-21 步的 issue）",
    "RMSNorm at 0.90x the copy or more at every shape of 64 MiB or more (steps "
    "19-21's issue)":
        "RMSNorm 达到复制的 0.90x 或更高，"
        "64 MiB 及以上的每种形状都要达到（第 19-21 步的 issue）",
    "The fused residual add and RMSNorm in bfloat16 at 0.90x the bfloat16 copy or "
    "more (its GB/s count x, the residual, h and y), at every shape of 32 MiB or more (steps "
    "19-21's issue)":
        "融合了残差加法的 bfloat16 RMSNorm 达到 0.90x 或更高"
        "（相对 bfloat16 复制；它的 GB/s 计入了 x、残差、h 和 y 四路），"
        "32 MiB 及以上的每种形状都要达到（第 19-21 步的 issue）",
    "RMSNorm ahead of PyTorch's at every shape (steps 19-21's issue)":
        "RMSNorm 在每种形状上都快过 PyTorch 的对应运算"
        "（第 19-21 步的 issue）",
    "RMSNorm ahead of compiled PyTorch's at every shape (steps 19-21's issue)":
        "RMSNorm 在每种形状上都快过编译后 PyTorch 的对应运算"
        "（第 19-21 步的 issue）",
    "bfloat16 RMSNorm ahead of PyTorch's at every shape (steps 19-21's issue)":
        "bfloat16 RMSNorm "
        "在每种形状上都快过 PyTorch 的对应运算（第 19-21 步的 issue）",
    "bfloat16 RMSNorm ahead of compiled PyTorch's at every shape (steps 19-21's "
    "issue)":
        "bfloat16 RMSNorm "
        "在每种形状上都快过编译后 PyTorch 的对应运算（第 19-21 步的 issue）",
    "The fused residual add and RMSNorm ahead of PyTorch's at every shape (steps "
    "19-21's issue)":
        "融合了残差加法的 RMSNorm "
        "在每种形状上都快过 PyTorch 的对应运算（第 19-21 步的 issue）",
    "The fused residual add and RMSNorm ahead of compiled PyTorch's at every shape "
    "(steps 19-21's issue)":
        "融合了残差加法的 RMSNorm "
        "在每种形状上都快过编译后 PyTorch 的对应运算（第 19-21 步的 issue）",
    "| target | step | where it is met | where it is missed |":
        "| 目标 | 步骤 | 达标 | 未达标 |",
    "Checked against {source} by `make docs` (tools/rows_targets.py): each target reads its "
    "step's own run, and a share or a ratio one hair below its line is a miss. A ratio is the "
    "medians'; a win or a loss needs every round apart, so a tie may carry a large ratio where "
    "the other side's rounds spread widely. Runs: {runs}.":
        "本表由 `make docs`（tools/rows_targets.py）对照 {source} 逐项检查："
        "每个目标只读那一步自己的那次运行；比例或比值哪怕只差一丝没到线，也算没达到。"
        "比值取的是双方中位数之比；领先或落后要求双方各轮都互不重叠，所以对方各轮波动很大时，"
        "比值再大也可能只算持平。各次运行：{runs}。",
    "{run} at {rev} ({steps})":
        "{run}（在 {rev} 测得；用于 {steps}）",
    "every shape, {lo} to {hi} (the most at {top})":
        "每种形状都领先，{lo} 到 {hi}（最高的在 {top}）",
    "{n} of {total} shapes, {lo} to {hi} (the most at {top})":
        "{n} 种形状领先（共 {total} 种），{lo} 到 {hi}（最高的在 {top}）",
    "losses: {shapes}":
        "落后：{shapes}",
    "ties: {shapes}":
        "持平：{shapes}",
    "{head}: {parts}":
        "{head}：{parts}",
    "every shape":
        "每种形状都达到",
    "{n} of {total} shapes":
        "{n} 种形状达到（共 {total} 种）",
    "wins at {shapes}":
        "在 {shapes}领先",
    "ties at the other {ties}":
        "其余 {ties} 种持平",
    "all ties":
        "全部持平",
    "{ratio}: {us} against {other_us} us":
        "{ratio}：{us} 微秒对 {other_us} 微秒",
    "{other} was not timed in {step}'s run":
        "{other} 没有在 {step} 的那次运行里计时",
    "{other} not timed at {shapes}":
        "{other} 没有在 {shapes} 上计时",
    "{step}'s run has none of these shapes":
        "{step} 的那次运行里没有这些形状",
    "{what} ({value})":
        "{what}（{value}）",
    "{first} and {last}":
        "{first} 和 {last}",
    "Nsight Compute on each op's last step, below its copy, one launch each, at the shapes "
    "profiled ({sources}): how busy DRAM was and how full the SMs were, then the kernel that ran "
    "and its launch (blocks counts every block of a cluster). A bfloat16 step reads against the "
    "bfloat16 copy; — where a profile holds no value.":
        "每种运算的最后一步放在它对应的复制下面，在做过性能分析的各个形状上给出 Nsight Compute 计数器，"
        "每个程序只分析一次启动（{sources}）：先看 DRAM 有多忙、SM 有多满，再看实际运行的 kernel "
        "和它的启动配置（线程块数把簇里的每个线程块都算在内）。bfloat16 的步骤要和 bfloat16 复制对照看；"
        "— 表示性能分析文件里没有这个值。",
    "threads a block x blocks, registers a thread": "每个线程块的线程数 x 线程块数，每个线程的寄存器数",
    "the kernel profiled": "分析的 kernel",
    "{block} x {grid}, {regs}": "{block} x {grid}，{regs}",
    "| program | {shapes} |": "| 程序 | {shapes} |",
    "{mark} Measured on an earlier version of the code (revision in parentheses): {names}. To "
    "measure them again: {commands}.":
        "{mark} 这些数据测的是代码的旧版本（括号里是当时的代码版本）：{names}。重新测量请运行 {commands}。",
    "the copy, GB/s": "复制，GB/s",
    "the bfloat16 copy, GB/s": "bfloat16 复制，GB/s",
    "the bfloat16 steps against the bfloat16 copy and PyTorch, per shape":
        "各个形状上 bfloat16 各步与 bfloat16 复制、PyTorch 的对比",
    "The bfloat16 steps move 2 bytes an element: their bar is the copy in bfloat16 "
    "(rows/copy16), and PyTorch runs the same operation on bfloat16 tensors.":
        "bfloat16 各步每个元素只搬 2 字节，所以它们的参照是 bfloat16 复制（rows/copy16），"
        "PyTorch 也在 bfloat16 张量上做同样的运算。",
    "| shape | MiB | bf16 copy us | {step} us | share of the bf16 copy | PyTorch bf16 us | vs "
    "PyTorch | vs torch.compile |":
        "| 形状 | MiB | bf16 复制（微秒） | {step}（微秒） | 占 bf16 复制的比例 | PyTorch bf16（微秒） "
        "| 相对 PyTorch | 相对 torch.compile |",
    "| shape | {step} us | step 9, one array, us | share of step 9 | CUB segmented us | vs CUB "
    "| PyTorch us | vs PyTorch | vs torch.compile |":
        "| 形状 | {step}（微秒） | 第 9 步整体求和（微秒） | 占第 9 步的比例 | CUB 分段归约（微秒） "
        "| 相对 CUB | PyTorch（微秒） | 相对 PyTorch | 相对 torch.compile |",
    "| shape | median us | rounds us | GB/s | share of its bar | vs previous step | vs PyTorch "
    "| vs torch.compile |":
        "| 形状 | 中位数（微秒） | 各轮（微秒） | GB/s | 占参照的比例 | 相对上一步 | 相对 PyTorch "
        "| 相对 torch.compile |",
    "**{mark} Some figures on this page measured an earlier version of the code:** "
    "{names}, in {files} (a program's code hash covers its own files and the shared "
    "harness in common/: a change to either marks its figures). The tables and charts mark each "
    "one with its revision; to measure them again: {commands}.":
        "**{mark} 本页有些数据测的是代码的旧版本：**{names}，见 {files}"
        "（程序的代码哈希涵盖它自己的文件和共用的测试框架 common/，两者任何一处改动，它的数据都会被标出）。"
        "表格和图表逐一标出了这些数据，并注明当时的代码版本；重新测量请运行 {commands}。",
    "every part 1 program": "第 1 部分的每个程序",
    "every part 2 program": "第 2 部分的每个程序",
    "; ": "；",
    "{mark} Measured on an earlier version of the code (revision in parentheses): {names}. "
    "`{command}` measures it again.":
        "{mark} 这些数据测的是代码的旧版本（括号里是当时的代码版本）：{names}。"
        "重新测量请运行 `{command}`。",
    "Not measured yet: {source} has no rows for {step} (`make verify ONLY={step}` on a GPU "
    "measures it).": "尚未测量：{source} 里没有 {step} 的数据（在有 GPU 的机器上运行 `make verify ONLY={step}` 即可测量）。",
    "{this}/rows.cu is identical to {prev}/rows.cu.": "{this}/rows.cu 与 {prev}/rows.cu 完全相同。",
    "{step} is the first step of part 2; there is no previous step.":
        "{step} 是第 2 部分的第一步，没有上一步。",
    "bytes read from DRAM": "从 DRAM 读取的字节数",
    "bytes written to DRAM": "写入 DRAM 的字节数",
    "L2 hit rate, %": "L2 命中率 %",
    "warp-level global load instructions": "warp 级全局加载指令数",
    "registers per thread": "每个线程的寄存器数",
    "32-byte sectors per global load request": "每个全局加载请求涉及的 32 字节扇区数",
    "Measured on {gpu} (driver {driver}, CUDA {cuda}, built with {toolchain} for {arch}) at "
    "revision {rev}, code hash {hash}, run {run}, {rounds} rounds. A cell is the median round "
    "(of an even number, the faster of the middle two; each round the median of its "
    "repetitions, in a process of its own), the fastest and slowest rounds in brackets; a "
    "ratio is a win or a loss only where the two programs' rounds do not overlap, otherwise a "
    "tie ([the baselines](../README.md#the-baselines)). Source: {source}.":
        "测量于 {gpu}（驱动 {driver}，CUDA {cuda}，用 {toolchain} 为 {arch} 编译），代码版本 {rev}，"
        "代码哈希 {hash}，运行 {run}，共 {rounds} 轮。每格给出中位的那一轮（轮数为偶数时取中间两轮里较快的一轮；"
        "每轮取本轮各次重复的中位数，在单独的进程里运行），方括号里是最快和最慢的一轮；只有两个程序的各轮结果"
        "互不重叠时，比值才算领先或落后，否则算持平（见[基线](../README.zh-CN.md#基线)）。数据来源：{source}。",
    "Nsight Compute at {shape}, {gpu} at revision {rev}, from {source}.":
        "Nsight Compute，形状 {shape}，{gpu}，代码版本 {rev}，数据来自 {source}。",
    "{step}: which elements of a {rows} x {cols} matrix the first load instruction of warps 0 "
    "to 3 reads; warp 0 touches {sectors} sectors of 32 bytes":
        "{step}：在 {rows} x {cols} 的矩阵中，warp 0 到 3 的第一条加载指令读的是哪些元素；"
        "warp 0 涉及 {sectors} 个 32 字节扇区",
    "No access-pattern picture for {step}: it reads its rows as {base} does, whose page has the "
    "picture.":
        "{step} 没有访问模式图：它读取各行的方式与 {base} 相同，那一步的页面上有图。",
    "No picture of its own for {step}: {base}'s page draws how its bulk copies split a row; the "
    "pairs' arrows there are {base}'s own idea.":
        "{step} 没有自己的图：它的批量拷贝怎样切分一行，见 {base} 页面上的图；图中 (max, sum) 对的箭头画的是 {base} 独有的做法。",
    "{step}: which of a cluster's {blocks} blocks takes each bfloat16 of one row ({cols} of them, "
    "shrunk: a head and a tail read by threads, the body's 16-byte packs copied into shared memory by "
    "cp.async.bulk, a share per block), and where each warp's (max, sum) lands in every block":
        "{step}：簇里有 {blocks} 个线程块，一行里的每个 bfloat16 由其中哪一个负责（共 {cols} 个，已缩小："
        "头部和尾部由线程读取，主体的 16 字节 pack 由 cp.async.bulk 拷进共享内存，每个线程块一份），以及每个 warp "
        "的 (max, sum) 落在每个线程块的哪个槽位",
    "{step}: which of a cluster's {blocks} blocks takes each float of one row ({cols} floats, shrunk: "
    "a head and a tail read by threads, the body's 16-byte packs copied into each block's shared "
    "memory by cp.async.bulk, a share of y and one of dy), the slot rank x {warps} + warp of every "
    "block that each warp's sum of dy * y is stored into, and dx written over dy's share and sent out "
    "by bulk copies":
        "{step}：簇里有 {blocks} 个线程块，一行里的每个 float 由其中哪一个负责（共 {cols} 个 float，已缩小："
        "头部和尾部由线程读取，主体的 16 字节 pack 由 cp.async.bulk 拷进各线程块的共享内存，y 一份、dy 一份），"
        "每个 warp 的 dy * y 之和存进每个线程块的哪个槽位（rank × {warps} + warp），以及写在 dy 那一份上、"
        "再由批量拷贝送出去的 dx",
    "{step}: which of a cluster's {blocks} blocks holds each float4 of one row ({packs} float4s, "
    "{slots} in each thread's registers, the rest in shared memory), and the one exchange of the "
    "blocks' (max, sum) pairs":
        "{step}：簇里 {blocks} 个线程块中，一行的每个 float4 由哪一个持有（共 {packs} 个 float4，"
        "每个线程的寄存器里放 {slots} 个，其余放在共享内存里），以及各线程块的 (max, sum) 对只做一次的交换",
    "{step}: which of a cluster's {blocks} blocks holds each float4 of one row ({packs} float4s, "
    "{slots} in each thread's registers, the rest in shared memory), and the two exchanges of the "
    "blocks' sums: the mean, then the variance":
        "{step}：簇里 {blocks} 个线程块中，一行的每个 float4 由哪一个持有（共 {packs} 个 float4，"
        "每个线程的寄存器里放 {slots} 个，其余放在共享内存里），以及各线程块的部分和所做的两次交换："
        "先得均值，再得方差",
    "{step}: for each row of a {rows} x {cols} matrix, its split in x and the pieces in which its "
    "body reads gamma and beta, whose 16-byte boundaries fall elsewhere in every row":
        "{step}：{rows} x {cols} 的矩阵中，每一行在 x 里怎样切分，以及它的主体分几段读取 gamma 和 beta："
        "这两个数组的 16 字节边界在每一行都落在别处",
    "{step}: how each row of a {rows} x {cols} matrix is split: up to {most} floats before its "
    "first 16-byte boundary and after its last whole float4, loaded one by one, and float4s "
    "between them":
        "{step}：{rows} x {cols} 的矩阵中每一行怎样切分：每行至多 {most} 个 float 位于第一个 16 字节"
        "边界之前、至多同样多个位于最后一个完整的 float4 之后，都逐个加载；两者之间用 float4",

}

# Line 1 of every program's source, without "// ": the "what changed"
# column of the results tables.
SUMMARIES = {
    # part 1: stepN_*/reduce.cu and the baseline
    "Interleaved addressing with %: the textbook first tree, correct and slow.":
        "用 % 判断的交错寻址：教科书上最初的树形归约，结果对，速度慢。",
    "Strided index: the working threads are packed into the first warps.":
        "跨步索引：干活的线程集中到前几个 warp。",
    "Sequential addressing: a warp reads 32 consecutive words, one per bank.":
        "顺序寻址：一个 warp 读 32 个连续的字，每个 bank 一个。",
    "First add during load: each thread adds two elements as it loads them.":
        "加载时先加一次：每个线程边加载边把两个元素相加。",
    "Unrolled last warp: the final six levels run without __syncthreads().":
        "展开最后一个 warp：最后六层不再调用 __syncthreads()。",
    "Complete unroll: the block size is a template parameter, known at compile time.":
        "完全展开：线程块大小是模板参数，编译期就已知。",
    "Many elements per thread: a grid-stride loop sums in a register first.":
        "每个线程处理多个元素：先用网格跨步循环在寄存器里累加。",
    "Warp shuffles: the tree runs in registers; shared memory holds one sum per warp.":
        "warp shuffle：树形归约在寄存器里完成；共享内存里每个 warp 只存一个和。",
    "Vector loads: each load instruction fetches a float4, 16 bytes.":
        "向量化加载：每条加载指令取回一个 float4，即 16 字节。",
    "Single pass: the last block to finish adds the partial sums, in the same launch.":
        "单趟归约：最后完成的线程块在同一次启动里把各个部分和加起来。",
    "CUB DeviceReduce::Sum: NVIDIA's library reduction, the bar for step 8.":
        "CUB DeviceReduce::Sum：NVIDIA 库里的归约，是第 8 步的参照。",
    # part 2: rows/stepN_*/rows.cu and its baselines
    "Copy: y = x, every float read once and written once.":
        "复制：y = x，每个 float 读一次、写一次。",
    "CUB DeviceSegmentedReduce::Sum: NVIDIA's library sum of many segments.":
        "CUB DeviceSegmentedReduce::Sum：NVIDIA 库里对许多分段分别求和的实现。",
    "One thread per row: thread r adds row r's floats from left to right.":
        "每行一个线程：线程 r 从左到右累加第 r 行的 float。",
    "One block per row: part 1's block reduction, once per row.":
        "每行一个线程块：第 1 部分的线程块归约，每行做一次。",
    "One warp per row: several rows per block, and no shared memory at all.":
        "每行一个 warp：一个线程块处理好几行，完全不用共享内存。",
    "Vector loads: each lane reads 16 bytes (a float4) per load, UNROLL at once.":
        "向量化加载：每个 lane 每次加载读 16 字节（一个 float4），一次发射 UNROLL 条。",
    "Threads per row from the shape: few, wide rows get several warps each.":
        "每行的线程数由形状决定：行少而宽时，每行分到好几个 warp。",
    "LayerNorm, the textbook way: three passes over each row in global memory.":
        "教科书式的 LayerNorm：对全局内存中的每一行读三趟。",
    "One read: each thread keeps its share of the row in registers.":
        "只读一次：每个线程把自己负责的那段行数据留在寄存器里。",
    "Wide rows: what the registers cannot hold waits in shared memory.":
        "宽行：寄存器放不下的部分先放在共享内存里。",
    "Softmax: two reductions per row, a max and a sum of exponentials.":
        "softmax：每行两次归约，先求最大值，再求指数之和。",
    "Online softmax: the max and the sum of exponentials in one pass.":
        "在线 softmax：最大值和指数之和在同一趟里求出。",
    "bfloat16 in and out: half the bytes, every sum still in float.":
        "bfloat16 输入与输出：字节数减半，所有求和仍用 float。",
    "Aligned rows: the odd floats at both ends one by one, the rest as float4s.":
        "对齐各行：两端多出来的 float 逐个处理，其余用 float4。",
    "LayerNorm in bfloat16: step 11's bfloat16 loads and stores, on step 7.":
        "bfloat16 的 LayerNorm：把第 11 步的 bfloat16 加载与存储用在第 7 步上。",
    "Aligned LayerNorm: step 10's head and tail split, with gamma and beta cut to fit.":
        "对齐的 LayerNorm：沿用第 10 步的首尾切分，gamma 和 beta 按各自的对齐分段读取。",
    "Aligned LayerNorm in bfloat16: step 12's bfloat16 loads and stores, on step 13.":
        "bfloat16 的对齐 LayerNorm：把第 12 步的 bfloat16 加载与存储用在第 13 步上。",
    "Clusters: a wide row's group spans several blocks, which share one exchange.":
        "线程块簇：一个宽行的线程组分给几个线程块，它们只做一次交换。",
    "bfloat16 clusters: step 15's cluster softmax on bfloat16 rows.":
        "bfloat16 的线程块簇：把第 15 步的簇 softmax 用在 bfloat16 的行上。",
    "Cluster LayerNorm: a row wider than one block holds spans the blocks of a cluster.":
        "簇 LayerNorm：一个线程块装不下的宽行，分给一个线程块簇的各个线程块。",
    "bfloat16 cluster LayerNorm: step 17's cluster LayerNorm on bfloat16 rows.":
        "bfloat16 的簇 LayerNorm：把第 17 步的簇 LayerNorm 用在 bfloat16 的行上。",
    "RMSNorm: no mean to take away, so one reduction a row where LayerNorm has two.":
        "RMSNorm：不用减去均值，所以每行只要一次归约，LayerNorm 要两次。",
    "bfloat16 RMSNorm: step 19's RMSNorm on bfloat16 rows.":
        "bfloat16 的 RMSNorm：把第 19 步的 RMSNorm 用在 bfloat16 的行上。",
    "The residual add, fused: h = x + residual written out and normalised in the same pass.":
        "融合残差加法：h = x + residual 写出去，并在同一趟里做归一化。",
    "Welford LayerNorm: one read for the mean and the variance, merged with Chan's formula.":
        "Welford LayerNorm：读一遍同时得到均值和方差，用 Chan 的公式合并。",
    "Bulk copies: wide bfloat16 rows come into shared memory by the copy engine.":
        "批量拷贝：宽的 bfloat16 行由拷贝引擎搬进共享内存。",
    "Narrow rows: a bfloat16 row of 512 or fewer elements gets a group of 8 or 16 threads.":
        "窄行：bfloat16 行不超过 512 个元素时，只分给 8 个或 16 个线程。",
    "Packed registers: a bfloat16 row stays in its 16-bit form in registers, two to a register.":
        "打包寄存器：bfloat16 行在寄存器里保持 16 位原样，一个寄存器放两个。",
    "Pushed pairs: each warp's pair is stored into every block on an mbarrier, not met at a barrier.":
        "推送 (max, sum) 对：每个 warp 把自己的一对直接写进每个线程块，记在 mbarrier 上，不再在屏障处会合。",
    "Copy in bfloat16: y = x, every element read once and written once.":
        "bfloat16 复制：y = x，每个元素读一次、写一次。",
    # extras/
    "Float atomics: step 9 with its ticket replaced by atomicAdd into the result.":
        "float 原子加：把第 9 步的票号换成直接对结果做 atomicAdd。",
    "Kahan-compensated accumulator: step 8 whose serial adds keep their lost low bits.":
        "Kahan 补偿累加器：第 8 步的串行加法把丢掉的低位找回来。",
}


# ----------------------------------------------------------------------------
# The words of the results charts (tools/chart_zh.py draws their Chinese twins)
# ----------------------------------------------------------------------------

CHART_STRINGS = {
    # tools/plot.py, part 2's map (bench.py --widths: <gpu>-rows-widths-gbps.png)
    "row sum": "按行求和",
    "LayerNorm, bfloat16": "LayerNorm，bfloat16",
    "softmax, bfloat16": "softmax，bfloat16",
    "RMSNorm, bfloat16": "RMSNorm，bfloat16",
    "residual add + RMSNorm, bfloat16": "残差加法 + RMSNorm，bfloat16",
    "the copy": "复制",
    "part 1's step 9, the same floats as one array": "第 1 部分的第 9 步，把同样的 float 当作一个数组",
    "bfloat16 copy": "bfloat16 复制",
    "columns a row (log2 scale), 256 MiB of x": "每行的列数（log2 刻度），x 共 256 MiB",
    # tools/diagrams.py, part 2's picture of step 26's bulk copies and pushed pairs (rows-step26_bf16_push-bulk.png)
    "cp.async.bulk: warp 0's lanes copy the share in chunks (16 KB, shrunk to one pack), counted "
    "in bytes on one mbarrier":
        "cp.async.bulk：warp 0 的各个 lane 把这一份分段拷进来（每段 16 KB，图里缩成一个 pack），"
        "按字节计在一个 mbarrier 上",
    "st.async: warp w of block r writes its (max, sum) into slot r.w of every block, counted on a "
    "second mbarrier: no cluster barrier to meet":
        "st.async：线程块 r 的 warp w 把自己的 (max, sum) 写进每个线程块的槽位 r.w，计在第二个 "
        "mbarrier 上：不必在簇屏障处会合",
    "each block combines its slots in one fixed order (the same bits in every block),\nwrites y "
    "over x in shared memory, and sends it out by cp.async.bulk":
        "每个线程块按同一个固定顺序合并自己的各个槽位（各线程块的结果逐位相同），\n在共享内存里用 y 覆盖 x，"
        "再用 cp.async.bulk 写出去",
    "head and tail: read by threads": "头部和尾部：由线程读取",
    # tools/diagrams.py, part 3's picture of step 13's cluster (back-step13_cluster-cluster.png)
    "rest: read twice": "其余部分：读两遍",
    "cluster.sync(), then lane k of every warp reads block k's sum: s, the same bits in every block":
        "cluster.sync() 之后，每个 warp 的 lane k 读线程块 k 的和：得到 s，每个线程块里逐位相同",
    "each block writes dx = y * (dy - s) over its floats; a block leaves only when no other can "
    "still read its sum":
        "每个线程块为自己的那些 float 写出 dx = y * (dy - s)；直到别的线程块都不会再读它的和，"
        "它才退出",
    "summed, then read again for dx": "先求和，算 dx 时再读一遍",
    # tools/diagrams.py, part 3's picture of step 14's bulk copies (back-step14_bulk-bulk.png)
    "y, dy": "y 和 dy",
    "dy, then dx": "dy，之后是 dx",
    "head and tail: read and written by threads": "头部和尾部：由线程读写",
    "room of a share that no pack fills": "一份中没有 pack 填入的空位",
    "cp.async.bulk: warp 0's lanes copy the block's shares of y and dy into s_share in chunks "
    "(16 KB, shrunk to one pack), counted in bytes on one mbarrier":
        "cp.async.bulk：warp 0 的各个 lane 把本线程块的 y 和 dy 各一份分段拷进 s_share（每段 16 KB，"
        "图里缩成一个 pack），按字节计在一个 mbarrier 上",
    "dx = y * (dy - s) is written over dy in s_share and leaves by cp.async.bulk":
        "dx = y * (dy - s) 写在 s_share 里 dy 的位置上，再由 cp.async.bulk 写出去",
    # tools/diagrams.py, part 3's picture of the column reduction (back-columns.png)
    "LayerNorm backward: dgamma and dbeta are sums down the columns":
        "LayerNorm 反向传播：dgamma 和 dbeta 是沿各列向下的求和",
    "back/step0_thread: a thread per row": "back/step0_thread：每行一个线程",
    "back/step2_partials: a warp along a row, a partial row per block":
        "back/step2_partials：一个 warp 沿一行读，每个线程块一行部分和",
    "thread = row": "线程 = 行",
    "atomicAdd from every row, in no fixed order": "每一行都 atomicAdd 进来，顺序不固定",
    "each block sums its rows down each column, in row order":
        "每个线程块按行的顺序，沿各列向下累加自己的行",
    "one load instruction of warp 0: 32 rows, 32 sectors":
        "warp 0 的一条加载指令：32 行，32 个扇区",
    "step 0: read by its row's thread, one column per trip":
        "第 0 步：由该行的线程读取，每次迭代一列",
    "one load instruction of warp 0: 32 neighbouring columns, one 128-byte line":
        "warp 0 的一条加载指令：相邻的 32 列，一条 128 字节的缓存行",
    # tools/grade_class.py, the class chart (docs/grading.md)
    "speed ratio: the submission's GB/s over the reference's":
        "速度比：提交程序的 GB/s 除以参照程序的 GB/s",
    "(median of rounds; whiskers: slowest and fastest round)": "（各轮的中位数；误差线：最慢和最快的一轮）",
    "every check passed": "全部检查通过",
    "every check passed, target met": "全部检查通过，达到目标",
    "every check passed, target missed": "全部检查通过，未达目标",
    "checks failed": "有检查未通过",
    "share of the grader's checks passed": "通过的评分器检查所占比例",
    # tools/plot.py, part 1
    "Numbers above bars: speed-up over the previous step / over step 0, from median time at "
    "the same n": "柱上的数字：相对上一步 / 相对第 0 步的加速比，按同一 n 下的中位数耗时计算",
    "GB/s  (4·n bytes / median time, decimal GB)": "GB/s（4·n 字节 / 中位数耗时，十进制 GB）",
    "GB/s (log scale)": "GB/s（对数坐标）",
    "GB/s relative to CUB at the same n  (above 1: faster than CUB)":
        "同一 n 下相对 CUB 的 GB/s（大于 1 表示比 CUB 快）",
    "whiskers: the rounds least and most in the step's favour": "误差线：对这一步最不利和最有利的两轮",
    "n (floats)": "n（float 个数）",
    "n (floats, log2 scale)": "n（float 个数，log2 坐标）",
    "small n: launch overhead dominates": "n 小时：启动开销占主导",
    "(time ≈ constant, so GB/s grows with n)": "（耗时几乎不变，所以 GB/s 随 n 增长）",
    "large n: bandwidth bound": "n 大时：受限于带宽",
    "(lines flatten below the peak)": "（曲线在峰值之下变平）",
    "CUB\n(library)": "CUB\n（库）",
    "log scale": "对数坐标",
    "log scale, zero at the base": "对数坐标，0 画在底部",
    "CUB hatched grey": "CUB 用灰色斜线",
    "base": "起点",
    "inst": "指令数",
    "lanes": "lane 数",
    "achieved occupancy, % of peak warps": "实际占用率，占 warp 上限的 %",
    # tools/plot.py, part 2
    "GB/s  (bytes one run must move / median time)": "GB/s（一次运行必须搬运的字节数 / 中位数耗时）",
    "share of the bar's speed  (1 = as fast)": "占参照速度的比例（1 表示一样快）",
    "row sum steps": "按行求和各步",
    "LayerNorm steps": "LayerNorm 各步",
    "softmax steps": "softmax 各步",
    "bfloat16 steps (2 bytes an element)": "bfloat16 各步（每个元素 2 字节）",
    "copy and CUB segmented sum": "复制和 CUB 分段求和",
    "the three-stream copy": "三路数据流的复制",
    "copy of the same three streams (= 1)": "复制同样的三路数据流（= 1）",
    "bfloat16 copy of the same three streams (= 1)": "bfloat16 复制同样的三路数据流（= 1）",
    "LayerNorm backward steps": "LayerNorm 反向传播各步",
    "softmax backward steps": "softmax 反向传播各步",
    "copy of the same bytes (= 1)": "复制同样的字节（= 1）",
    "bfloat16 copy of the same bytes (= 1)": "bfloat16 复制同样的字节（= 1）",
    "step 9 on the same floats as one array (= 1)": "第 9 步把同样的 float 当作一个数组求和（= 1）",
    # tools/accuracy_chart.py
    "Rounding error of the float sum against n, per way of adding":
        "float 求和的舍入误差随 n 的变化，按加法方式分列",
    "|result − reference| / Σ|x|": "|结果 − 参考值| / Σ|x|",
    "random: uniform in [-1, 1)": "random：[-1, 1) 上均匀分布",
    "positive: uniform in [0, 1)": "positive：[0, 1) 上均匀分布",
    "wide: ±m·2^e, e in -20..20": "wide：±m·2^e，e 取 -20..20",
    "bound, sequential: (n-1)u": "误差界，顺序求和：(n-1)u",
    "bound, pairwise: ceil(log2 n)u": "误差界，两两求和：ceil(log2 n)u",
    "bound, Kahan: 2u": "误差界，Kahan：2u",
    "one seed per n": "每个 n 一个种子",
    "u = 2^-24": "u = 2^-24",
    # tools/variance_chart.py
    "the rows' mean, in standard deviations (variance 1)": "行均值，以标准差为单位（方差为 1）",
    "largest relative error of a row's variance": "行方差的最大相对误差",
    "A row's variance in float32, three ways (1024 rows of 1024 floats per point)":
        "用 float32 以三种方式计算行方差（每个点 1024 行，每行 1024 个 float）",
    "u = 2⁻²⁴ (one float rounding)": "u = $2^{-24}$（一次 float 舍入）",   # Noto Sans SC has no ⁻
    "100%: no digit right": "100%：没有一位是对的",
    "some rows' variance ≤ 0: rstd is NaN or huge": "有的行方差 ≤ 0：rstd 为 NaN 或极大",
    "one pass: E[x²] − E[x]²": "一趟：E[x²] − E[x]²",
    "two passes: mean, then Σ(x − mean)²": "两趟：先求均值，再求 Σ(x − mean)²",
    "Welford, lanes merged (Chan)": "Welford，各 lane 的结果用 Chan 的公式合并",
    # tools/multigpu_chart.py
    "multigpu/run, one process for all GPUs (step 9 + ncclAllReduce)":
        "multigpu/run，一个进程驱动所有 GPU（第 9 步 + ncclAllReduce）",
    "multigpu/run, one process per GPU": "multigpu/run，每块 GPU 一个进程",
    "torch.sum + torch.distributed all_reduce, one process per GPU":
        "torch.sum + torch.distributed all_reduce，每块 GPU 一个进程",
    "NCCL, one process for all GPUs (multigpu/run --vector)":
        "NCCL，一个进程驱动所有 GPU（multigpu/run --vector）",
    "NCCL, one process per GPU (multigpu/run --rank)": "NCCL，每块 GPU 一个进程（multigpu/run --rank）",
    "torch.distributed all_reduce, one process per GPU": "torch.distributed all_reduce，每块 GPU 一个进程",
    "whiskers: the fastest and slowest rounds": "误差线：最快和最慢的一轮",
    "one GPU": "一块 GPU",
    "n (floats, all GPUs together)": "n（所有 GPU 合计的 float 个数）",
    "bytes per GPU": "每块 GPU 的字节数",
    "time, us (median)": "耗时，微秒（中位数）",
    "All-reduce time: flat while latency-bound": "all-reduce 耗时：受限于延迟时几乎不变",
    "bus bandwidth, GB/s": "总线带宽，GB/s",
}

# (regular expression of a whole line, its Chinese form with {0}, {1}, ...
# for the groups), tried in order after CHART_STRINGS and STRINGS.
CHART_PATTERNS = [
    # tools/plot.py, part 2's map (bench.py --widths)
    (r"Part 2 on (.+): GB/s against the width, each op's last step beside the copy and PyTorch "
     r"\(dotted: the theoretical peak, (\d+) GB/s\)",
     "{0} 上的第 2 部分：GB/s 随列宽的变化，每种运算的最后一步与复制和 PyTorch 对照（点线：理论峰值 {1} GB/s）"),
    (r"Part 2 on (.+): GB/s against the width, each op's last step beside the copy "
     r"\(dotted: the theoretical peak, (\d+) GB/s\)",
     "{0} 上的第 2 部分：GB/s 随列宽的变化，每种运算的最后一步与复制对照（点线：理论峰值 {1} GB/s）"),
    # tools/diagrams.py, part 2's picture of step 26's bulk copies and pushed pairs (rows-step26_bf16_push-bulk.png)
    (r"(rows/step26_bf16_push): one row over a cluster of (\d+) blocks, by bulk copies",
     "{0}：用批量拷贝把一行分给 {1} 个线程块组成的簇"),
    (r"a row of (\d+) bfloat16s starting (\d+) elements past a 16-byte boundary: head (\d+), "
     r"(\d+) packs of 8, tail (\d+); (\d+) packs a share; (\d+) warps a block \(shrunk from 8\)",
     "一行 {0} 个 bfloat16，起点在 16 字节边界之后 {1} 个元素处：头部 {2} 个，{3} 个 8 元素的 pack，"
     "尾部 {4} 个；每份 {5} 个 pack；每个线程块 {6} 个 warp（实为 8 个，图中缩小）"),
    # tools/diagrams.py, part 3's picture of step 13's cluster (back-step13_cluster-cluster.png)
    (r"block (\d+)'s share", "线程块 {0} 的那一份"),
    (r"block (\d+): sum of dy \* y\nover its floats", "线程块 {0}：对自己那些 float\n求 dy * y 的和"),
    (r"(back/step13_cluster): one row of softmax's backward pass over a cluster of (\d+) blocks",
     "{0}：softmax 反向传播的一行分给由 {1} 个线程块组成的簇"),
    (r"(\d+) floats, B = (\d+) threads a block, (\d+) floats of y and of dy a thread \(shrunk "
     r"from 256 and 16\): block k holds floats (\d+)k to (\d+)k \+ (\d+), thread t every "
     r"(\d+)th from (\d+)k \+ t",
     "{0} 个 float，每个线程块 B = {1} 个线程，每个线程留 {2} 个 y 和 {2} 个 dy（由 256 和 16 缩小而来）："
     "线程块 k 负责第 {3}k 到第 {4}k + {5} 个 float，线程 t 从第 {7}k + t 个起每隔 {6} 个取一个"),
    # tools/diagrams.py, part 3's picture of step 14's bulk copies (back-step14_bulk-bulk.png)
    (r"(back/step14_bulk): one row of softmax's backward pass over a cluster of (\d+) blocks, "
     r"by bulk copies",
     "{0}：用批量拷贝把 softmax 反向传播的一行分给由 {1} 个线程块组成的簇"),
    (r"a row of (\d+) floats, y_row (\d+) floats? past a 16-byte boundary: head (\d+), (\d+) packs "
     r"of (\d+), tail (\d+); (\d+) packs a share \(share_bytes / 32\); (\d+) warps a block "
     r"\(shrunk from 8\)",
     "一行 {0} 个 float，y_row 在 16 字节边界之后 {1} 个 float 处：头部 {2} 个，{3} 个 {4} float 的 pack，"
     "尾部 {5} 个；每份 {6} 个 pack（share_bytes / 32）；每个线程块 {7} 个 warp（实为 8 个，图中缩小）"),
    (r"st\.async: lane r of warp w of block k stores the warp's sum of dy \* y into slot "
     r"k x (\d+) \+ w \(cell k\.w\) of block r, counted on a second mbarrier",
     "st.async：线程块 k 中 warp w 的 lane r 把这个 warp 的 dy * y 之和存进线程块 r 的槽位 k × {0} + w"
     "（格子 k.w），计在第二个 mbarrier 上"),
    (r"every block adds its (\d+) slots in one fixed order: s, the same bits in every block;",
     "每个线程块按同一个固定顺序把自己的 {0} 个槽位加起来：得到 s，各线程块里逐位相同；"),
    # tools/diagrams.py, part 3's picture of the column reduction (back-columns.png)
    (r"rows 0-(\d+):", "第 0-{0} 行："),
    (r"block (\d+): rows (\d+)-(\d+)", "线程块 {0}：第 {1}-{2} 行"),
    (r"block (\d+)", "线程块 {0}"),
    (r"partial row (\d+)", "第 {0} 行部分和"),
    (r"kernel 2 adds partial rows (\d+(?:, \d+)*) in this order, in every column",
     "第二个 kernel 在每一列上都按 {0} 的顺序累加各行部分和"),
    (r"(\d+) x (\d+) floats \(shrunk\); BLOCK_SIZE = (\d+), gridDim\.x = (\d+) \(one wave, "
     r"shrunk\); cells from the kernels' index expressions, no GPU",
     "{0} x {1} 个 float（已缩小）；BLOCK_SIZE = {2}，gridDim.x = {3}（一波，已缩小）；"
     "每个格子都由 kernel 的索引表达式算出，不需要 GPU"),
    # tools/plot.py: the caption line of programs measured on an earlier version
    (r"† measured on an earlier version of the code, at revision (.+)",
     "† 测的是代码的旧版本，代码版本 {0}"),
    # tools/grade_class.py, the class chart (docs/grading.md)
    (r"Class results on (.+): speed against (\S+) (\S+) \((\S+) at (.+)\)",
     "{0} 上的全班结果：速度对照 {3}，目标 {1} {2}（{4}）"),
    (r"Class results on (.+)", "{0} 上的全班结果"),
    (r"\s*target (\S+)", " 目标 {0}"),
    (r"\s*(\S+)  \((\d+) checks failed\)", "  {0}（{1} 项检查未通过）"),
    (r"not timed: (\d+) checks failed", "未计时：{0} 项检查未通过"),
    (r"does not build: compiler errors in (\S+)", "无法编译：编译器报错见 {0}"),
    (r"not graded: ran out of its (\S+) minutes", "未评分：用完了 {0} 分钟的时限"),
    (r"not graded: no reduce\.cu or rows\.cu", "未评分：没有 reduce.cu 或 rows.cu"),
    (r"Sum reduction on (.+), step by step: achieved bandwidth", "{0} 上的求和归约：每一步的实测带宽"),
    (r"Sum reduction on (.+): bandwidth against input size", "{0} 上的求和归约：带宽随输入规模的变化"),
    (r"Sum reduction on (.+): (\S+) and later against CUB, across n",
     "{0} 上的求和归约：{1} 及之后各步与 CUB 之比，随 n 的变化"),
    (r"Nsight Compute counters per step on (.+)", "{0} 上每一步的 Nsight Compute 计数器"),
    (r"theoretical peak (\S+) GB/s", "理论峰值 {0} GB/s"),
    (r"CUB at n = (.+): (\S+) GB/s", "n = {0} 时的 CUB：{1} GB/s"),
    (r"launch-bound: CUB's time within (\S+) of its fastest \((\S+) us\)",
     "受限于启动：CUB 的耗时不超过其最快耗时的 {0}（{1} 微秒）"),
    (r"driver (\S+)", "驱动 {0}"),
    (r"git (\S+)", "代码版本 {0}"),
    (r"median of (\d+) reps", "{0} 次重复的中位数"),
    (r"one verified run per point \(--check\), median of (\d+) seeds up to n = (\S+)",
     "每个点是一次通过验证的运行（--check），n = {1} 及以下取 {0} 个种子的中位数"),
    (r"one verified run per point \(--check\), one seed per n",
     "每个点是一次通过验证的运行（--check），每个 n 一个种子"),
    (r"error 0 drawn at (\S+)", "误差为 0 的点画在 {0}"),
    (r"Part 2 on (.+): every row program at (.+)", "{0} 上的第 2 部分：{1} 上的每个按行程序"),
    (r"LayerNorm on (.+): share of the copy kernel's speed, per shape",
     "{0}：各形状下 LayerNorm 相对复制 kernel 的速度"),
    (r"Softmax on (.+): share of the copy kernel's speed, per shape",
     "{0}：各形状下 softmax 相对复制 kernel 的速度"),
    (r"Row sums on (.+): share of part 1's step 9 on the same floats, per shape",
     "{0}：各形状下按行求和相对第 1 部分第 9 步（同样的 float）的速度"),
    (r"bfloat16 softmax and LayerNorm on (.+): share of the bfloat16 copy's speed, per shape",
     "{0}：各形状下 bfloat16 softmax 和 LayerNorm 相对 bfloat16 复制的速度"),
    (r"copy of the same bytes: (\S+) GB/s", "复制同样的字节：{0} GB/s"),
    (r"copy of the same three streams: (\S+) GB/s", "复制同样的三路数据流：{0} GB/s"),
    (r"Part 3 on (.+): backward passes, every program at (.+)",
     "{0} 上的第 3 部分：反向传播，{1} 上的每个程序"),
    (r"LayerNorm backward on (.+): share of the three-stream copy's speed, per shape",
     "{0}：各形状下 LayerNorm 反向传播相对三路数据流复制的速度"),
    (r"Softmax backward on (.+): share of the three-stream copy's speed, per shape",
     "{0}：各形状下 softmax 反向传播相对三路数据流复制的速度"),
    (r"bfloat16 softmax and LayerNorm backward on (.+): share of the bfloat16 three-stream "
     r"copy's speed, per shape",
     "{0}：各形状下 bfloat16 softmax 和 LayerNorm 反向传播相对 bfloat16 三路数据流复制的速度"),
    (r"part 1's step 9 on the same floats as one array: (\S+) GB/s",
     "第 1 部分的第 9 步把同样的 float 当作一个数组求和：{0} GB/s"),
    (r"(.+), revision (\S+(?: / \S+)*); median of (\d+) rounds, whiskers the fastest and slowest; L2 "
     r"flushed",
     "{0}，代码版本 {1}；{2} 轮的中位数，误差线是最快和最慢的一轮；清空 L2"),
    (r"PyTorch: not measured\. Source: (\S+)", "没有测 PyTorch。数据来源：{0}"),
    (r"PyTorch: (.+)\. Source: (\S+)", "PyTorch：{0}。数据来源：{1}"),
    (r"The sum over (\d+) x (.+) against one \(L2 flushed, median\)",
     "{0} 块 {1} 上的求和与一块相比（清空 L2，中位数）"),
    (r"speed-up of (\d+) GPUs over one", "{0} 块 GPU 相对一块的加速比"),
    (r"above 1 from (\S+)", "从 {0} 起大于 1"),
    (r"(busbw = algbw x \S+)", "{0}"),
    (r"(.+) \((\d+) SMs\)", "{0}（{1} 个 SM）"),     # a GPU's name is data: as it is
]


# The map's tables (tools/rows_docs.py) name each op as its chart's panel does.
STRINGS.update({title: CHART_STRINGS.get(title, title) for title in (
    "row sum", "LayerNorm", "softmax", "RMSNorm", "LayerNorm, bfloat16", "softmax, bfloat16",
    "RMSNorm, bfloat16", "residual add + RMSNorm, bfloat16")})


def apply(strings):
    """Make tools/docs.py speak these forms: fill its STRINGS table (English ->
    Chinese). tools/accuracy_docs.py looks its labels up here itself."""
    strings.update(STRINGS)


def summary(text, lang):
    """Line 1 of a program's source in `lang`; a summary with no Chinese
    form yet (a student's new step) stays English."""
    if lang == "en" or not text:
        return text
    return SUMMARIES.get(text, text)


# ----------------------------------------------------------------------------
# The key under the pictures of a Chinese page
# ----------------------------------------------------------------------------

FIGURE_KEY_TITLE = "**图中英文对照。** 图是用英文标注画的，下面逐项给出中文说明。"

FIGURE_KEYS = {
    "all": [
        "各图底部的小字是说，图由 tools/patterns.py 根据本步 reduce.cu 里的索引表达式算出，"
        "不需要 GPU，而且每个 if 都按 nvcc 13 为 sm_90 编译的方式（谓词化或分支）发射。",
    ],
    "lanes": [
        "lane 图（…-lanes.png，“which lanes work at each level”）里，每行是一层，每格是一个线程，"
        "按 warp 分组。副标题给出线程块大小，以及模型对这一步的一句话概括。右侧的 "
        "“N warps issue (k with no lane on), m lanes run” 是说，这一层有 N 个 warp 发射，"
        "其中 k 个没有 lane 在干活，共有 m 个 lane 执行。",
        "深蓝 “works: condition true, result used” 表示条件为真，结果有用。",
        "浅蓝 “runs, but no later level reads its result” 表示执行了，但后面没有哪一层读它的结果。",
        "灰色 “idle: its warp issues the instruction, its condition is false” "
        "表示条件为假而空闲，但所在的 warp 仍发射了这条指令。",
        "白色 “its warp does not issue the instruction at all” 表示所在的 warp 根本没有发射这条指令。",
        "灰色斜线 “a whole warp idles, yet issues (a branch would skip it)” "
        "表示整个 warp 都空闲却仍在发射，编译成分支的话，它本可以跳过这一层。",
        "分隔线下方的 “the last block only, once per launch” 只在单趟归约的图里出现，"
        "指只有最后一个线程块执行、每次启动只执行一次的几层；“gridDim.x = G partials” 指有 G 个部分和要加。",
    ],
    "banks": [
        "bank 图（…-banks.png，“shared-memory banks, worst warp request of each level”）里，"
        "每行是一层里最差的那次 warp 请求。横轴 “bank = word address mod 32 (4-byte words)” "
        "是说 bank 编号等于字地址对 32 取模，每个字 4 字节。",
        "绿色表示这个 bank 只服务一个字，一轮完成。格子里的数字 k 表示这个 bank 要服务 k 个不同的字，"
        "请求分 k 轮完成，多出 k - 1 轮；颜色越暖，轮数越多。",
        "右侧的 “every request: one word per bank, one pass” 是说每次请求都是一个 bank 一个字，一轮完成。"
        "“k-way: warp w, …; +e extra passes per block” 是说最差的是 warp w 的这次访问，"
        "一个 bank 最多要服务 k 个字，每个线程块因此多出 e 轮。"
        "“no lane touches shared memory” 是说这一层不访问共享内存。",
    ],
    "shuffle": [
        "shuffle 图（…-shuffle.png，标题就是那行代码）里，每行是一次 __shfl_down_sync。"
        "“start” 是初始值，“offset k” 是偏移为 k 的那一层；横轴 “lane” 是 lane 编号，"
        "连线表示 lane i 读取 lane i + offset 的值。副标题是说，源 lane 超出 31 时读回自己的 v；"
        "每个 warp 都这样做一遍，然后 warp 0 再对各 warp 的和做一遍。",
        "深蓝表示这个 lane 的和后面要用，浅蓝表示照样计算，但结果没人用。",
        "右侧的 “lanes 0-k hold sums of m” 是说 lane 0 到 k 各自持有 m 个值的和，"
        "“lane 0 holds all 32” 是说 lane 0 持有全部 32 个值的和，“each lane's own value” 是每个 lane 自己的值。",
    ],
    "loads": [
        "加载图（…-loads.png，“which thread loads which element”）把网格缩小到几个线程，"
        "好让每个元素都有一个格子。副标题是说，真正启动时每个线程块的线程多得多，索引算式不变。"
        "每列是一个线程（“thread i = blockIdx.x * BLOCK + tid”，粗竖线分开线程块 0 和 1），"
        "每行是一次加载，格子里是加载的 g_in 索引或索引范围。",
        "右侧写明缩小后的 BLOCK、gridDim.x、stride、UNROLL 和 n。第 8 步的图还写明 --offset 1 "
        "让 g_in 从 16 字节边界之后 4 字节处开始，于是 “head”、“n4”（完整 float4 的个数）和 “tail” 各是多少。",
        "图例 “body” 是主体，“head” 是头部，“tail” 是尾部。“no load” 和格子里的 “-” 表示边界检查为假，"
        "加载指令照样发射，只是被谓词屏蔽。",
    ],
    "ticket": [
        "票号图（…-ticket.png，“the ticket, and the last block's reads”）的第一行 "
        "“fetch_add, in time order” 是各线程块按时间先后执行 fetch_add、领到的票号（“block b / ticket t”），"
        "连线指向它在 “g_partials[blockIdx.x]” 中的槽位。下面 “last block, trip t” 各行是"
        "最后一个线程块的循环在第 t 次迭代中由哪个线程（“tid k”）读哪个槽位。",
        "右侧说明了四点。票号是计数器在这次 fetch_add(1) 之前的值。只有领到 gridDim.x - 1 的线程块 s_last 为真，"
        "它继续往下做，其余的返回。完成的先后每次运行都不同，槽位以及最后一个线程块读它们的顺序却不变。"
        "之后的 block_reduce 每次都是同一棵树，所以每次都得到相同的位。",
        "图例 “the last block, and what it reads” 是最后一个线程块及它读的槽位，"
        "“returns after its ticket” 是领完票号就返回，“one slot per block” 是每个线程块一个槽位，"
        "“-: b >= gridDim.x, the lane idles” 是超出槽位范围的 lane 空闲。",
    ],
}

FIGURE_KINDS = ("lanes", "banks", "shuffle", "loads", "ticket")


def figure_key(kinds):
    """The markdown key for a page whose pictures are of these kinds."""
    lines = [FIGURE_KEY_TITLE, ""]
    for kind in ("all",) + tuple(k for k in FIGURE_KINDS if k in kinds):
        first, *details = FIGURE_KEYS[kind]
        lines += [f"- {first}"] + [f"  - {item}" for item in details]
    return "\n".join(lines)
