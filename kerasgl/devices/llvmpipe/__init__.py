"""Mesa llvmpipe (the GPU of machines without one): its compute threads (threads.py), where they
wait (placement.py), and a helper process that compiles a large model's shaders ahead
(compile_ahead.py), all reached through LlvmpipePolicy (policy.py) and only on llvmpipe."""
