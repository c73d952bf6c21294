// Shared helpers for every compute shader (each file includes this one first).
// Defines injected by kerasgl/shaders.py come before this file's text.

#ifndef LOCAL_SIZE
#define LOCAL_SIZE 64
#endif

// Dispatches larger than the 65535 work-group limit of one dimension use a 2D grid of groups;
// this turns (group, lane) back into one linear index. For 1D work groups of LOCAL_SIZE lanes.
uint linear_index() {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * uint(LOCAL_SIZE)
           + gl_LocalInvocationID.x;
}
