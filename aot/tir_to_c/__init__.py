"""TVM TIR to plain C, the toolkit of every backend that lowers through TIR (the CPU
backend, an accelerator's TIR-lowered host code, out-of-tree backends): the s_tir pass
list (``pipeline``), the memory-saving loop fusion before it (``fusion``), facts about a
lowered kernel (``analysis``) and aot's own TIR-to-C printer (``printer``).

It sits below the stages: backends use it while lowering, the executor's emitter uses the
printer's C spellings of types and literals; it imports no stage.
"""
