# Web-search workload flow-size CDF.
# Source paper: M. Alizadeh et al., "Data Center TCP (DCTCP)", ACM SIGCOMM 2010
#   (flow-size distribution measured in a production web-search cluster).
# Points taken from the public tabulation in repository
#   alibaba-edu/High-Precision-Congestion-Control, file traffic_gen/WebSearch_distribution.txt
#   (the tabulation used by the HPCC paper, Li et al., SIGCOMM 2019).
# Units: that file already gives sizes in bytes; its cumulative values are in
#   percent, and were divided by 100 here.
# Its first point is (0 bytes, 0%). Our format requires a positive size, so that
#   point is written as (1 byte, 0); the effect on the distribution is negligible.
# Interpret with linear interpolation between consecutive points.
# Mean flow size (linear interpolation): about 1,711,250 bytes (~1.71 MB).
#   Median: about 73 KB.
# Note: ns-2 scripts that use the pFabric-style packet tabulation of this
#   workload (CDF_search.tcl, sizes in 1460-byte packets) assume a mean of
#   1745 packets (~2.5 MB), so published means differ between tabulations.
#   This file follows the HPCC numbers exactly.
# Format: SIZE_BYTES CUMULATIVE_PROBABILITY
1 0
10000 0.15
20000 0.2
30000 0.3
50000 0.4
80000 0.53
200000 0.6
1000000 0.7
2000000 0.8
5000000 0.9
10000000 0.97
30000000 1
