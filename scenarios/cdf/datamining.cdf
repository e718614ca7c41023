# Data-mining workload flow-size CDF.
# Source paper: A. Greenberg et al., "VL2: A Scalable and Flexible Data Center
#   Network", ACM SIGCOMM 2009 (flow sizes measured in a data-mining cluster),
#   in the form tabulated by pFabric (Alizadeh et al., SIGCOMM 2013) and its ns-2 successors.
# Points taken from the public tabulation in repository
#   HKUST-SING/MQ-ECN-NS2, file scripts/CDF_vl2.tcl
#   (ns-2 empirical-CDF format: size, an unused column, cumulative probability).
# Units: that file gives sizes in packets with a 1460-byte payload (MSS). Each
#   size was multiplied by 1460 to convert to bytes (1 pkt = 1460 B, ...,
#   666667 pkts = 973,333,820 B, about 1 GB).
# The first two lines have the same size: 50% of flows are exactly 1 packet
#   (1460 B), i.e. a point mass at the smallest size.
# Interpret with linear interpolation between consecutive points.
# Mean flow size (linear interpolation): about 5116.6 packets
#   = about 7,470,236 bytes (~7.47 MB). This is consistent with the
#   "meanFlowSize = 5117*1460" used by the ns-2 scripts that load this table.
# Format: SIZE_BYTES CUMULATIVE_PROBABILITY
1460 0
1460 0.5
2920 0.6
4380 0.7
10220 0.8
389820 0.9
3076220 0.95
97333820 0.99
973333820 1
